package link

import (
	"context"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// TestHandedRefusesOtherCredentials: a first turn whose task a turn of
// alice's request chose, sent under another key of alice's (other roles),
// is handed no sub-agent of that request, as Match, Continued and Turn
// link no call or turn under other credentials (CheckCaller). It was
// handed the turn (CheckOwner): the turn then refused 403 by the
// hand-off's hold, not run as a request of its own, and the choice marked
// used, so the sub-agent of alice's own key lost its disambiguation.
func TestHandedRefusesOtherCredentials(t *testing.T) {
	rt := reach.New(nil)
	var c ModelChoices
	billing := &auth.Identity{Principal: "alice", Tenant: "acme", Roles: []string{"billing"}}
	ctx, _, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "a", Principal: "alice", Tenant: "acme", Roles: billing.Roles})
	if err != nil {
		t.Fatal(err)
	}
	_, turn, err := rt.BeginModel(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	c.RecordCall(turn, "call_1", "researcher", []byte(`{"input":"find the refund policy"}`))
	if h := c.Handed("find the refund policy", &auth.Identity{Principal: "alice", Tenant: "acme"}); h != nil {
		t.Errorf("a first turn under alice's key of no role was handed the sub-agent of request %s, begun with role billing", h.Turn.Request.ID())
	}
	if h := c.Handed("find the refund policy", billing); h == nil || h.Turn != turn {
		t.Errorf("a first turn under the key that began request a was handed %v, want its turn", h)
	}
}

// TestHandedNamesNoDisputedTool: a turn that chose a call of another name
// with a sub-agent's task beside the real one (a prompt injection naming a
// privileged agent) does not name the sub-agent: its hand-off goes by no
// tool, so the sub-request's agent is not the model's choice. One name
// alone, or a call made again under the same name, is the sub-agent's.
func TestHandedNamesNoDisputedTool(t *testing.T) {
	rt := reach.New(nil)
	var c ModelChoices
	alice := &auth.Identity{Principal: "alice"}
	ctx, _, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "a", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	_, turn, err := rt.BeginModel(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	c.RecordCall(turn, "call_1", "billing_admin", []byte(`{"input":"find the refund policy"}`))
	c.RecordCall(turn, "call_2", "researcher", []byte(`{"input":"find the refund policy"}`))
	c.RecordCall(turn, "call_3", "researcher", []byte(`{"input":"summarise the ticket"}`))
	h := c.Handed("find the refund policy", alice)
	if h == nil || h.Turn != turn {
		t.Fatalf("handed %v, want the turn", h)
	}
	if h.Tool != "" {
		t.Errorf("the sub-agent of a task two calls of other names carry goes by %q, want no model-chosen name", h.Tool)
	}
	if h := c.Handed("summarise the ticket", alice); h == nil || h.Tool != "researcher" {
		t.Errorf("the sub-agent of a task one call carries: %+v, want it named researcher", h)
	}
}
