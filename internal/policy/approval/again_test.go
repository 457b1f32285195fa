package approval

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestPendingSaysWhichRequest: a client that begins a new request each
// run (one MCP session a run) gets a new approval each time; the pending
// text names what finds the approved one again, the root request (and how
// to name it) or, for a call with a key, the same key, and following it
// runs the approved call once. The key itself is not in the text.
func TestPendingSaysWhichRequest(t *testing.T) {
	f := newFixture(t, nil)
	var last *reach.Request
	begin := func(id string) context.Context { // a run: the last one has ended
		if last != nil {
			last.End()
		}
		ctx, req, err := f.rt.Begin(t.Context(), &reach.RequestOptions{ID: id, Principal: "alice", Budget: &reach.Budget{Turns: 100}})
		if err != nil {
			t.Fatal(err)
		}
		last = req
		t.Cleanup(req.End)
		return ctx
	}
	args := json.RawMessage(`{"order_id":"A1","amount":20}`)
	call := func(ctx context.Context, key string) *reach.Result {
		return f.rt.Call(ctx, &reach.Call{ID: "c1", Tool: "refund", Arguments: args, IdempotencyKey: key})
	}

	first := call(begin("req_run1"), "")
	if first.Status != reach.StatusPending {
		t.Fatalf("first run: %s %+v", first.Status, first.Error)
	}
	s := first.Error.Suggestion
	for _, want := range []string{"in request req_run1 (the same session, or one that names it", `_meta "reach/request"`, "Reach-Request header",
		`"request_id"`, "a call in another request asks for approval again"} {
		if !strings.Contains(s, want) {
			t.Errorf("pending suggestion %q lacks %q", s, want)
		}
	}
	if strings.Contains(s, "idempotency key") {
		t.Errorf("a call without a key is told of one: %q", s)
	}
	id := regexp.MustCompile(`apr_\w+`).FindString(first.Error.Message)
	if _, err := f.q.Approve(id, alice, ""); err != nil {
		t.Fatal(err)
	}
	// The next run, a new request: a new approval, the first not used.
	if again := call(begin("req_run2"), ""); again.Status != reach.StatusPending || strings.Contains(again.Error.Message, id) {
		t.Fatalf("the same call in a new request: %s %+v; want a new approval", again.Status, again.Error)
	}
	if f.runs.Load() != 0 {
		t.Fatalf("%d runs before the call came in its request", f.runs.Load())
	}
	// As the text says: in the request it names (ended, begun again by id).
	if res := call(begin("req_run1"), ""); res.Status != reach.StatusSuccess || f.runs.Load() != 1 {
		t.Fatalf("the call in the request the text names: %s %+v, %d runs", res.Status, res.Error, f.runs.Load())
	}

	// With a key: the same key in any request finds it, and the text says
	// so without the key.
	args = json.RawMessage(`{"order_id":"B2","amount":5}`)
	keyed := call(begin("req_run3"), "secret-key-77")
	if keyed.Status != reach.StatusPending {
		t.Fatalf("keyed call: %s", keyed.Status)
	}
	s = keyed.Error.Suggestion
	if !strings.Contains(s, "the same idempotency key, in any request") || !strings.Contains(s, "req_run3") || strings.Contains(s, "secret-key-77") {
		t.Errorf("keyed pending suggestion %q", s)
	}
	if _, err := f.q.Approve(regexp.MustCompile(`apr_\w+`).FindString(keyed.Error.Message), alice, ""); err != nil {
		t.Fatal(err)
	}
	if res := call(begin("req_run4"), "secret-key-77"); res.Status != reach.StatusSuccess || f.runs.Load() != 2 {
		t.Fatalf("the keyed call in a new request: %s %+v, %d runs", res.Status, res.Error, f.runs.Load())
	}
}

// TestPendingWithoutRoot: an approval with no root request (a stored row
// without one) is not told "in request  (...)": it says the same request.
func TestPendingWithoutRoot(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		s := pendingError(&Approval{ID: "apr_x", Tool: "refund", Principal: "alice"}, keyed).Suggestion
		if strings.Contains(s, "request  ") || strings.Contains(s, "request (") || !strings.Contains(s, "in the same request") {
			t.Errorf("keyed %v: %q", keyed, s)
		}
	}
}
