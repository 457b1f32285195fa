package reach

import (
	"encoding/json"
	"strings"
	"testing"
)

// On one instance: a write without a key runs (its tool held, its caller
// still there, or gone unnoticed yet), and the identical call in the same
// root request (its client's retry) is refused as still running, naming
// the first's request; nothing runs twice. The identical call of another
// root request (another agent of the principal) runs. Once the first is
// back, the same root's identical call runs: the mark went with it.
// Before, the retry ran the write a second time.
func TestInFlight22RetryHereWhileItRuns(t *testing.T) {
	rt := New(nil)
	runs, started, release := deafAddItem(t, rt, 2, false)
	ctx, req, err := rt.Begin(t.Context(), &RequestOptions{Principal: "alice", ID: "first22"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	call := func(id string) *Result {
		return rt.Call(ctx, &Call{ID: id, Tool: "add_item", Arguments: json.RawMessage(`{"item":"pear"}`)})
	}
	done := make(chan *Result, 1)
	go func() { done <- call("c1") }()
	<-started
	res := call("c2")
	if res.Status != StatusError || res.Error == nil || res.Error.Code != "still_running" || !strings.Contains(res.Error.Message, "request first22") {
		t.Fatalf("the identical call in the same request while c1 runs: %s %+v; want still_running, naming request first22", res.Status, res.Error)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("add_item ran %d times, want once", n)
	}
	other := make(chan *Result, 1)
	go func() { other <- cutOffCall(t, rt, nil, "alice", "c1", `{"item":"pear"}`) }()
	<-started // another root request's identical write runs
	release()
	if r := <-done; r.Status != StatusSuccess {
		t.Fatalf("c1 once back: %s %+v", r.Status, r.Error)
	}
	if r := <-other; r.Status != StatusSuccess {
		t.Fatalf("the other request's identical write: %s %+v", r.Status, r.Error)
	}
	if r := call("c3"); r.Status != StatusSuccess {
		t.Fatalf("the identical call once c1 ended: %s %+v; want it run", r.Status, r.Error)
	}
	if n := runs.Load(); n != 3 {
		t.Fatalf("add_item ran %d times, want 3 (c1, the other request's, c3)", n)
	}
}
