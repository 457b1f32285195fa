package postgres

import (
	"sync"
	"testing"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/storetest"
)

// The retention sweep removes old finished state, in whole batches, and
// keeps what runs, waits or is dead-lettered, across a restart too.
func TestPostgresRetention(t *testing.T) {
	url := pgtest.Database(t)
	s := openPostgres(t, url)
	storetest.Retention(t, s, func(t *testing.T) store.Store {
		s.Close()
		return openPostgres(t, url)
	})
}

// Two instances that sweep one store at once remove each row once between
// them, and what is left is what one sweep leaves.
func TestPostgresRetentionTwoInstances(t *testing.T) {
	url := pgtest.Database(t)
	a, b := openPostgres(t, url), openPostgres(t, url)
	cut := storetest.RetentionSetup(t, a)
	var mu sync.Mutex
	var all store.Retained
	var wg sync.WaitGroup
	for _, s := range []*Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				got, err := s.SweepFinished(t.Context(), cut, 1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				all.Requests += got.Requests
				all.Frames += got.Frames
				all.Tasks += got.Tasks
				all.Approvals += got.Approvals
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if all != storetest.RetentionRemoved {
		t.Errorf("the two sweeps removed %+v together, want %+v", all, storetest.RetentionRemoved)
	}
	storetest.CheckRetained(t, a)
}
