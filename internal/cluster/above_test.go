package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/store/postgres"
)

// A sub-request another instance began, joined here by its id (a
// sub-agent's call through this instance), spends from the ledgers above
// it: its model turns on b are refused once its parent's turns are spent,
// though its own carve has turns left, and its tokens count for the
// parent. (Without reading the requests above it, b admitted all 4 turns of
// c's carve where p had 2 left, and p's tokens stayed at 0.)
func TestJoinedSubRequestSpendsFromAbove(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoInstances(t, time.Minute)
	var rts [2]*reach.Runtime
	cs := [2]*Cluster{a, b}
	sts := [2]*postgres.Store{a.st, b.st}
	for i, c := range cs {
		rts[i] = reach.New(&reach.Options{Requests: c.Recorder(durable.New(c.st, nil, nil)), DisableLoopGuard: true})
	}
	pctx, p, err := rts[0].Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice", Budget: &reach.Budget{Turns: 4, Tokens: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	if _, sub, err := rts[0].Delegate(pctx, &reach.Delegation{Agent: "one", Task: "t", ID: "c"}); err != nil || sub.Budget().Turns != 4 {
		t.Fatalf("delegate: %v", err)
	}
	for range 2 {
		if _, _, err := cs[0].AdmitTurn(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	_, c, err := rts[1].Begin(ctx, &reach.RequestOptions{ID: "c", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for range 4 {
		if _, _, err := cs[1].AdmitTurn(ctx, c); err == nil {
			admitted++
		}
	}
	if admitted != 2 {
		t.Errorf("c's part on b made %d turns; want 2, what p had left of its 4", admitted)
	}
	if err := cs[1].Spend(ctx, c, 50, 0); err != nil {
		t.Fatal(err)
	}
	if sp, err := sts[1].Spent(ctx, "p"); err != nil || sp.Turns != 4 || sp.Tokens != 50 {
		t.Errorf("p has spent %+v (%v); want 4 turns and c's 50 tokens", sp, err)
	}
}
