package reach_test

import (
	"testing"

	"github.com/agentreach/reach"
)

// TestStoppedNamedAgainInProcessStaysStopped: a request stopped (by an
// operator, a guard) and ended, then named again by its owner while the
// runtime still holds it, is refused at Begin with its stop, as it is
// after a restart (read back from the store). Before, the runtime began it
// afresh: no longer stopped, with a whole budget again, so that naming
// the id of a request its tool-call budget and a stop had ended let a
// call run.
func TestStoppedNamedAgainInProcessStaysStopped(t *testing.T) {
	rt := budget27Runtime(&reach.Options{DisableLoopGuard: true})
	opts := &reach.RequestOptions{ID: "stopped", Principal: "alice", Budget: &reach.Budget{ToolCalls: 1}}
	ctx, r1, err := rt.Begin(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res := budget27Call(rt, ctx, "a1"); res.Status != reach.StatusSuccess {
		t.Fatal(res.Error)
	}
	r1.Stop(reach.Cancel, "operator", "runaway")
	r1.End()
	if s := r1.State(); s != reach.RequestState("stopped_cancel") {
		t.Fatalf("the stopped request is %s", s)
	}
	ctx, r2, err := rt.Begin(t.Context(), opts)
	if err == nil {
		res := budget27Call(rt, ctx, "a2")
		r2.End()
		t.Fatalf("the stopped request named again was begun (its call: %s, used %+v); want refused as stopped", res.Status, r2.Usage())
	}
	if r, ok := rt.Lookup("stopped"); !ok || r != r1 {
		t.Errorf("after the refusal the runtime holds %v, want the stopped request", r)
	}
	// Another principal naming the id is refused too, as after a restart.
	if _, r3, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "stopped", Principal: "bob"}); err == nil {
		r3.End()
		t.Errorf("bob named alice's stopped request and it was begun")
	}
}
