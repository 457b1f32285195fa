package upstream

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentreach/reach"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFindUnnamedOnlyForOneOwner: on a shared upstream session, a message
// that names no call goes to the only client with calls in flight while
// the session has carried one owner's calls (principal in tenant) only;
// once a call of another owner (another tenant, or another principal of
// the same) has been on it, even one that ended, it goes to none, and so
// on a shared session that a newer one replaced and that is used again.
// On a client's own session the guess stays.
func TestFindUnnamedOnlyForOneOwner(t *testing.T) {
	rt := reach.New(nil)
	var seen *reach.Frame
	rt.MustRegister(reach.Tool{Name: "look", Access: reach.Read, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		seen, _ = reach.FrameFrom(ctx)
		return json.RawMessage(`"ok"`), nil
	}})
	frame := func(principal, tenant string) *reach.Frame {
		t.Helper()
		ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{Principal: principal, Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(req.End)
		seen = nil
		if res := rt.Call(ctx, &reach.Call{ID: "c", Tool: "look"}); res.Status != reach.StatusSuccess || seen == nil || seen.Request != req {
			t.Fatalf("the call of request %s: %+v, its frame %v", req.ID(), res.Error, seen)
		}
		return seen
	}
	acme, acme2, globex, bob := frame("alice", "acme"), frame("alice", "acme"), frame("alice", "globex"), frame("bob", "acme")
	ss := &mcp.ServerSession{}
	for _, tc := range []struct {
		name   string
		before []*reach.Frame // calls that ended on the session, in order
		now    *reach.Frame   // the call in flight
		own    bool
		found  bool
	}{
		{"one owner's calls only", []*reach.Frame{acme}, acme2, false, true},
		{"another tenant's call ended", []*reach.Frame{acme}, globex, false, false},
		{"another principal's call ended", []*reach.Frame{bob}, acme, false, false},
		{"back to the first owner", []*reach.Frame{acme, globex}, acme2, false, false},
		{"a client's own session", []*reach.Frame{acme}, globex, true, true},
	} {
		var fs openCalls
		cs := &mcp.ClientSession{}
		for _, f := range tc.before {
			fs.add(cs, &openCall{frame: f, ss: ss, own: tc.own})()
		}
		fl := &openCall{frame: tc.now, ss: ss, own: tc.own}
		done := fs.add(cs, fl)
		if got := fs.find(cs, mcp.Meta{}, hasSession); (got == fl) != tc.found || (got != nil && got != fl) {
			t.Errorf("%s: found %p, want the call in flight %v", tc.name, got, tc.found)
		}
		done()
	}

	// A session replaced by a newer one, then used again, is not taken
	// for a new one: what it carried before is forgotten.
	var fs openCalls
	old, fresh := &mcp.ClientSession{}, &mcp.ClientSession{}
	fs.add(old, &openCall{frame: globex, ss: ss})()
	fs.add(fresh, &openCall{frame: acme, ss: ss})()
	fl := &openCall{frame: acme2, ss: ss}
	defer fs.add(old, fl)()
	if got := fs.find(old, mcp.Meta{}, hasSession); got != nil {
		t.Errorf("an older shared session used again: found %p, want none", got)
	}
	if msg := fs.unnamed(old, "a sampling request"); msg != otherCallers("a sampling request") {
		t.Errorf("the upstream is told %q, want that the session carries several principals' calls", msg)
	}
}
