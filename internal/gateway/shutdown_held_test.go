package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestShutdownAnswersHeldCall: a gateway that shuts down (reach serve on
// SIGTERM: Serve's context ends) while a call is held for a human's
// decision (approvals wait) answers that call as pending, its approval
// kept, before it closes the connection. Without approval.Queue.Release in
// Serve the call waited out the shutdown's grace period and its client got
// the connection cut with no answer.
func TestShutdownAnswersHeldCall(t *testing.T) {
	_, p, srv := upstreamGateway(t, probeConfig+"approvals: {ttl: 5m, wait: 1m}\n")
	type answer struct {
		status int
		body   []byte
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := http.Post(srv.URL+"/v1/calls", "application/json",
			strings.NewReader(`{"request_id":"held-1","tool_calls":[{"call_id":"d","tool":"up__delete_all","arguments":{}}]}`))
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- answer{resp.StatusCode, b, err}
	}()
	held := false
	for deadline := time.Now().Add(time.Minute); !held && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		_, out := do(t, "GET", srv.URL+"/v1/approvals?status=pending", "", nil)
		_, held = path(out, "approvals", 0, "id").(string)
	}
	if !held {
		t.Fatal("no pending approval appeared")
	}
	srv.Listener.Close() // Serve's context ends, as on SIGTERM; waits for Serve
	a := <-done
	if a.err != nil {
		t.Fatalf("the held call got no answer from a gateway that shut down: %v", a.err)
	}
	var out map[string]any
	if err := json.Unmarshal(a.body, &out); err != nil {
		t.Fatalf("answer %d %q: %v", a.status, a.body, err)
	}
	if r, _ := path(out, "results", 0).(map[string]any); r == nil || r["status"] != "pending" {
		t.Errorf("the held call was answered %d %s, want its result pending (approve it, then call again)", a.status, a.body)
	}
	p.mu.Lock()
	n := len(p.metas)
	p.mu.Unlock()
	if n != 0 {
		t.Errorf("the upstream ran the held call %d times, want none", n)
	}
}
