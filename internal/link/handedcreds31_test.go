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
