package gateway

import (
	"fmt"
	"testing"
	"time"
)

// TestKeyRetryInNewRequestWhileItRunsOnAnother: a write under the caller's
// idempotency key runs on instance a (a tool that blocks 10 s); the agent,
// in a new root request, sends it again with the same key through
// instance b while it still runs there. The key's claim on the shared
// store holds the retry: it waits for the first and is answered by its
// recorded result, and the write runs once.
func TestKeyRetryInNewRequestWhileItRunsOnAnother(t *testing.T) {
	a, b, p := twoInstances(t, "tools:\n  up__slow: {access: write}\n")
	call := func(base, request string) map[string]any {
		_, out := do(t, "POST", base+"/v1/calls", fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"w","tool":"up__slow","arguments":{"text":"once"},"idempotency_key":"slow-1"}]}`, request), nil)
		r, _ := path(out, "results", 0).(map[string]any)
		return r
	}
	first := make(chan map[string]any, 1)
	go func() { first <- call(a, "k1") }()
	select {
	case <-p.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the first write did not start")
	}
	retry := call(b, "k2") // while the first runs on a
	if r := <-first; r["status"] != "success" {
		t.Fatalf("the first write: %v", r)
	}
	if retry["status"] != "success" || retry["replayed"] != true || retry["data"] != "slept" {
		t.Fatalf("the retry in a new request through b: %v; want the first's result, replayed", retry)
	}
	p.mu.Lock()
	runs := len(p.metas)
	p.mu.Unlock()
	if runs != 1 || len(p.started) != 0 {
		t.Fatalf("the write ran %d times (%d more started); want once", runs, len(p.started))
	}
}
