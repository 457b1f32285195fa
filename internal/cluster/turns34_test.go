package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
)

// On the shared ledger, a model turn refused because the request's token
// (or cost) budget is spent on every instance counts no turn: AdmitTurn
// debited it under the ledger's lock before it read the tokens, and gives
// it back as it refuses. A turn admitted and then not answered is given
// back too (GiveBackTurn). Before, each such refusal spent a turn of the
// stored ledger: an agent told to finish found its turns spent as well.
func TestTurnRefusedOverTokensCountsNoTurnOnPostgres34(t *testing.T) {
	ctx := context.Background()
	_, a, _ := twoInstances(t, time.Minute)
	rt := reach.New(&reach.Options{Requests: a.Recorder(durable.New(a.st, nil, nil)), DisableLoopGuard: true})
	_, r, err := rt.Begin(ctx, &reach.RequestOptions{ID: "r", Principal: "alice", Budget: &reach.Budget{Turns: 5, Tokens: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.AdmitTurn(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := a.Spend(ctx, r, 100, 0); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, _, err := a.AdmitTurn(ctx, r)
		if re, ok := errors.AsType[*reach.Error](err); !ok || re.Code != "budget_tokens" {
			t.Fatalf("a turn past the spent token budget: %v, want budget_tokens", err)
		}
	}
	sp, err := a.st.Spent(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if sp.Turns != 1 {
		t.Errorf("the stored ledger counts %d turns, want the 1 admitted", sp.Turns)
	}

	// A turn admitted and given back (not answered) counts none.
	_, s, err := rt.Begin(ctx, &reach.RequestOptions{ID: "s", Principal: "alice", Budget: &reach.Budget{Turns: 2}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, _, err := a.AdmitTurn(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := a.GiveBackTurn(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if sp, err := a.st.Spent(ctx, "s"); err != nil || sp.Turns != 0 {
		t.Errorf("the stored ledger counts %d turns (%v), want none: each was given back", sp.Turns, err)
	}
}
