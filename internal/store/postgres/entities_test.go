package postgres

import (
	"sync"
	"testing"

	"github.com/agentreach/reach/internal/entities"
	"github.com/agentreach/reach/internal/pgtest"
)

// Two instances (two stores on one database) that both read an entity at
// one version and claim it to write: one claim wins, the others find it
// stale, however their transactions interleave.
func TestClaimEntitiesAcrossInstances(t *testing.T) {
	url := pgtest.Database(t)
	stores := []*Store{openPostgres(t, url), openPostgres(t, url)}
	ctx := t.Context()
	v1, err := stores[0].BumpEntities(ctx, []string{"order:9"})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		from, err := stores[1].EntityVersions(ctx, []string{"order:9"})
		if err != nil || (round == 0 && from["order:9"] != v1) {
			t.Fatalf("EntityVersions = %v, %v", from, err)
		}
		const n = 8
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for i := range n {
			wg.Go(func() {
				_, stale, err := stores[i%2].ClaimEntities(ctx, []entities.Claim{{Name: "order:9", From: from["order:9"], Check: true}})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if len(stale) == 0 {
					won++
				}
			})
		}
		wg.Wait()
		if won != 1 {
			t.Fatalf("round %d: %d of %d claims from one version won, want 1", round, won, n)
		}
	}
}
