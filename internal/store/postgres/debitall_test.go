package postgres

import (
	"testing"

	"github.com/agentreach/reach/internal/store"
)

// DebitAll debits each request of the chain, once, uncapped: a turn's
// charge reaches its request and every request above it together.
func TestDebitAllChain(t *testing.T) {
	a, _, _ := twoPostgres(t)
	ctx := t.Context()
	if _, ok, err := a.Debit(ctx, "p", store.Spend{Tokens: 10}, store.Spend{Tokens: 20}); err != nil || !ok {
		t.Fatalf("debit of p: %v %v", ok, err)
	}
	if err := a.DebitAll(ctx, []string{"c", "p"}, store.Spend{Tokens: 150, CostNano: 7}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]store.Spend{"c": {Tokens: 150, CostNano: 7}, "p": {Tokens: 160, CostNano: 7}} {
		if sp, err := a.Spent(ctx, id); err != nil || sp != want {
			t.Errorf("%s has spent %+v (%v); want %+v: each debited once, past p's cap of 20 (a charge is not capped)", id, sp, err, want)
		}
	}
}
