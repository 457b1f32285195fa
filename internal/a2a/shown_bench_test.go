package a2a

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// BenchmarkFirstEvent: a streaming send through the gateway, its tasks
// kept in a real store, one at a time: first-event-µs is how long the
// caller waits for the task's first event (its id), which waits for the
// task's first view to be stored; task-µs the whole send (submitted,
// working, completed: three states, three writes); write-µs one task
// write, what the first event waits for more than it did.
func BenchmarkFirstEvent(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		st, err := sqlite.Open(b.Context(), b.TempDir(), &sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		benchFirstEvent(b, st)
	})
	b.Run("postgres", func(b *testing.B) {
		pg := pgtest.Own(b)
		url, err := pg.CreateDatabase(b.Context(), "firstevent")
		if err != nil {
			b.Fatal(err)
		}
		st, err := postgres.Open(b.Context(), url, &postgres.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		benchFirstEvent(b, st)
	})
}

// timedStore times a store's task writes.
type timedStore struct {
	TaskStore
	n    atomic.Int64
	took atomic.Int64 // ns
}

func (s *timedStore) PutTask(ctx context.Context, rec *store.TaskRecord) (bool, error) {
	start := time.Now()
	ok, err := s.TaskStore.PutTask(ctx, rec)
	s.took.Add(int64(time.Since(start)))
	s.n.Add(1)
	return ok, err
}

func benchFirstEvent(b *testing.B, st TaskStore) {
	h := newHarness(b, nil, "worker")
	ts := &timedStore{TaskStore: st}
	h.g.opts.Tasks = ts
	go func() {
		for range h.agents["worker"].working {
		}
	}()
	c := h.client("worker", "bob", false)
	var first, whole time.Duration
	for i := 0; b.Loop(); i++ {
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(fmt.Sprint("say ", i)))
		start := time.Now()
		n := 0
		for ev, err := range c.SendStreamingMessage(b.Context(), &a2a.SendMessageRequest{Message: m}) {
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				if _, ok := ev.(*a2a.Task); !ok {
					b.Fatalf("first event %T; want the task", ev)
				}
				first += time.Since(start)
			}
			n++
		}
		whole += time.Since(start)
	}
	b.ReportMetric(float64(first.Microseconds())/float64(b.N), "first-event-µs")
	b.ReportMetric(float64(whole.Microseconds())/float64(b.N), "task-µs")
	if n := ts.n.Load(); n > 0 {
		b.ReportMetric(float64(ts.took.Load())/float64(n)/1e3, "write-µs")
	}
}
