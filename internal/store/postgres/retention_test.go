package postgres

import (
	"errors"
	"sync"
	"testing"
	"time"

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

// A database of schema 11 (before the index of the tasks by their request)
// gets it when a gateway opens it, and its first sweep keeps the ended
// request that a task not yet final names, and removes the one a final
// task names.
func TestPostgresMigratesTasksRequestIndex(t *testing.T) {
	url := pgtest.Database(t)
	s := openPostgres(t, url)
	ctx := t.Context()
	old := time.Now().Add(-time.Hour).UnixNano()
	if _, err := s.pool.Exec(ctx, `DROP INDEX tasks_request; DELETE FROM schema_migrations WHERE version = 12`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO requests (id, state, started, ended, updated) VALUES
		('of-working', 'ended', $1, $1, $1), ('of-done', 'ended', $1, $1, $1)`, old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO tasks (agent, id, request, state, final, data, created, updated) VALUES
		('planner', 't-working', 'of-working', 'TASK_STATE_WORKING', false, '{}', $1, $1),
		('planner', 't-done', 'of-done', 'TASK_STATE_COMPLETED', true, '{}', $1, $1)`, old); err != nil {
		t.Fatal(err)
	}
	s2 := openPostgres(t, url)
	var n int
	if err := s2.pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE indexname = 'tasks_request'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the index tasks_request after the migration: %d, %v; want it", n, err)
	}
	got, err := s2.SweepFinished(ctx, time.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if got.Requests != 1 || got.Tasks != 1 {
		t.Errorf("the sweep removed %+v; want the request and the task that are done", got)
	}
	if _, err := s2.GetRequest(ctx, "of-working"); err != nil {
		t.Errorf("GetRequest(of-working) after the sweep: %v; want it kept (a task not final names it)", err)
	}
	if _, err := s2.GetRequest(ctx, "of-done"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRequest(of-done) after the sweep: %v; want it removed", err)
	}
}
