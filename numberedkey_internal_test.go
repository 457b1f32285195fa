package reach

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/ids"
)

// TestNumberedCallKeysInCallOrder: the key derived for a write whose call
// id the gateway numbered (ids.AppendCall) leads with the call id, so
// that the keys of calls made one after the other in many sessions (each
// its own root request) sort in the order the calls were made: the
// store's unique index of the keys takes a commit's keys at its end, one
// page, not one page in each session's place. A call id a client named
// keeps "ROOT/CALL". Spelled "ROOT/CALL" for all, as before, the keys sort
// by session and the test fails.
func TestNumberedCallKeysInCallOrder(t *testing.T) {
	rt := New(nil)
	var reqs []*Request
	for range 5 {
		_, req, err := rt.Begin(context.Background(), &RequestOptions{Principal: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		defer req.End()
		reqs = append(reqs, req)
		time.Sleep(2 * time.Millisecond) // later sessions' ids sort after
	}
	prefix := ids.CallPrefix("mcp_")
	var recs []string
	for n := uint64(1); n <= 40; n++ {
		req := reqs[len(reqs)-1-int(n)%len(reqs)] // round the sessions, the later ones first
		id := string(ids.AppendCall(nil, prefix, n*7))
		rec, call, key := idemKeys(&Call{ID: id, Tool: "pay", req: req})
		if want := id + "/" + req.id; key != want || call != "pay:"+want || !strings.HasSuffix(rec, "\x00pay:"+want) {
			t.Fatalf("call %s of %s: keys %q, %q, %q; want the call's id first, %q", id, req.id, rec, call, key, want)
		}
		recs = append(recs, rec)
	}
	if !slices.IsSorted(recs) {
		t.Fatalf("the record keys of numbered calls in 5 sessions do not sort in call order: %q", recs)
	}
	_, key, _ := idemKeys(&Call{ID: "call_9f2", Tool: "pay", req: reqs[0]})
	if want := "pay:" + reqs[0].id + "/call_9f2"; key != want {
		t.Fatalf("a call id the client named: key %q, want %q", key, want)
	}
}

// TestNoteCutOffNumberedCall: recovery remembers a write a restart cut off
// whose key was derived from a numbered call id ("tool:CALL/ROOT"), as it
// does one of "tool:ROOT/CALL", and not a caller's own key that only
// begins with the call id. Without the numbered spelling in derivedKey,
// the retry after a restart would run the write again.
func TestNoteCutOffNumberedCall(t *testing.T) {
	rt := New(nil)
	scope := "alice\x00\x00"
	call := string(ids.AppendCall(nil, ids.CallPrefix("mcp_"), 42))
	began := time.Now().Add(-time.Minute)
	rt.NoteCutOff(scope+"add_item:"+call+"/req1/x", "add_item", "req1", "req1", call, "d1", began)
	rt.NoteCutOff(scope+"add_item:req1/"+call, "add_item", "req1", "req1", call, "d1", began)
	if n := rt.cutOffs.n.Load(); n != 0 {
		t.Fatalf("keys not spelled CALL/ROOT for a numbered call: %d writes remembered, want none", n)
	}
	rt.NoteCutOff(scope+"add_item:"+call+"/req1", "add_item", "req1", "req2", call, "d1", began)
	if n := rt.cutOffs.n.Load(); n != 1 {
		t.Fatalf("the derived key CALL/req1: %d writes remembered, want 1", n)
	}
	w, ok := rt.cutOffs.take(t.Context(), cutOffID{scope, "add_item", "d1"}, "req3", time.Now())
	if !ok || w.call != call || w.request != "req2" || !w.restart {
		t.Fatalf("the retry took %+v %v; want call %s of request req2, cut off by a restart", w, ok, call)
	}
	// Its root request's record gone: a key that begins with the call id.
	rt.NoteCutOff(scope+"add_item:"+call+"/req9", "add_item", "", "req9", call, "d2", began)
	if n := rt.cutOffs.n.Load(); n != 1 { // the one before was taken
		t.Fatalf("the derived key CALL/req9 without its root: %d writes remembered, want 1", n)
	}
}
