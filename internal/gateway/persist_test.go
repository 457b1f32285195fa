package gateway

import (
	"context"
	"testing"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
)

// With a data folder every decision reaches the audit log, writes are
// checkpointed with their idempotency key, and the chain verifies after a
// restart.
func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	g := newTestGateway(t, &Config{Data: dir})
	srv := serveTest(t, g)
	status, body := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"p1","tool_calls":[
		{"call_id":"c1","tool":"get_order","arguments":{"order_id":"1001"}},
		{"call_id":"c2","tool":"refund_order","arguments":{"order_id":"1001","amount":5,"reason":"damaged box"}},
		{"call_id":"c3","tool":"no_such_tool","arguments":{}}]}`, nil)
	if status != 200 {
		t.Fatalf("calls: %d %v", status, body)
	}
	if status, body := do(t, "GET", srv.URL+"/v1/deadletters", "", nil); status != 200 || body["deadletters"] == nil {
		t.Fatalf("deadletters: %d %v", status, body)
	}
	srv.Close()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, dir, &store.SQLiteOptions{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep, err := audit.Verify(ctx, st)
	if err != nil || rep.Events == 0 {
		t.Fatalf("verify: %v (%d events)", err, rep.Events)
	}
	evs, _ := audit.Show(ctx, st, "p1")
	decisions := map[string]string{}
	for _, e := range evs {
		decisions[e.Name] = e.Decision
	}
	if decisions["get_order"] != "completed" || decisions["no_such_tool"] != "refused" {
		t.Errorf("audit decisions = %v", decisions)
	}
	frames, _ := st.RequestFrames(ctx, "p1")
	var refund *store.Frame
	for _, f := range frames {
		if f.Name == "refund_order" {
			refund = f
		}
	}
	if refund == nil || refund.IdemKey == "" || !store.FrameDone(refund.State) {
		t.Fatalf("refund checkpoint = %+v", refund)
	}
}
