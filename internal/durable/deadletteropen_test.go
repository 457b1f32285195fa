package durable

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// deadStatesStore records the states the dead letters are listed in, and
// how many rows each listing read.
type deadStatesStore struct {
	*store.Memory
	mu     sync.Mutex
	states []string
	rows   int
}

func (s *deadStatesStore) ListDeadLetters(ctx context.Context, state string) ([]*store.DeadLetter, error) {
	ds, err := s.Memory.ListDeadLetters(ctx, state)
	s.mu.Lock()
	s.states = append(s.states, state)
	s.rows += len(ds)
	s.mu.Unlock()
	return ds, err
}

// TestOpenDeadLettersReadOnly: the open dead letters (with those an action
// holds) are read from the store by their state, not by reading every
// dead letter the store ever kept and leaving the settled ones: an
// operator's retry or dismissal looks its dead letter up among the open
// ones, and the queue keeps every settled one besides. They come oldest
// first, the taken ones among them.
func TestOpenDeadLettersReadOnly(t *testing.T) {
	ctx := context.Background()
	st := &deadStatesStore{Memory: store.NewMemory()}
	var ids []int64
	for i := range 8 {
		id, err := st.AddDeadLetter(ctx, &store.DeadLetter{Request: "trip", Frame: "f", Tool: "unbook", Args: []byte(`{}`), Attempts: i})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids[:5] { // settled long ago
		d, err := st.TakeDeadLetter(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		d.State = store.DeadResolved
		if err := st.UpdateDeadLetter(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.TakeDeadLetter(ctx, ids[6], ""); err != nil { // an action holds it
		t.Fatal(err)
	}
	c := New(st, nil, slog.New(slog.DiscardHandler))
	ds, err := c.List(ctx, reach.DeadLetterOpen)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range ds {
		got = append(got, d.ID+" "+string(d.State))
	}
	if want := []string{deadLetterID(ids[5]) + " open", deadLetterID(ids[6]) + " taken", deadLetterID(ids[7]) + " open"}; !slices.Equal(got, want) {
		t.Errorf("the open dead letters = %q, want %q", got, want)
	}
	if st.rows != 3 || slices.Contains(st.states, "") {
		t.Errorf("listing the open dead letters read %d rows of the store (listed in states %q), want the 3 open or taken ones", st.rows, st.states)
	}
	all, err := c.List(ctx, "")
	if err != nil || len(all) != 8 {
		t.Errorf("every dead letter = %d, %v; want 8", len(all), err)
	}
}
