package reach_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/agentreach/reach"
)

// modeStops is a store that holds the stop of request hold where a store
// makes it durable, and keeps each request's stops it is told, by mode,
// in order: the last is what the store keeps (a stop's record replaces
// the one before).
type modeStops struct {
	hold    string
	release chan struct{}
	mu      sync.Mutex
	stops   map[string][]reach.StopMode
}

func (m *modeStops) RequestBegan(context.Context, *reach.Request) error { return nil }
func (m *modeStops) RequestEnded(context.Context, *reach.Request)       {}

func (m *modeStops) RequestStopped(_ context.Context, r *reach.Request, c reach.Cause) {
	if r.ID() == m.hold {
		<-m.release
	}
	m.mu.Lock()
	m.stops[r.ID()] = append(m.stops[r.ID()], c.Mode)
	m.mu.Unlock()
}

func (m *modeStops) of(id string) []reach.StopMode {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.stops[id])
}

// A sub-request marked stopped by a stop above that is not stored yet
// (its record held on it), then isolated by a stop of its own (stored at
// once), keeps the isolation in the store: the held record of the weaker
// stop, made once the stop above is stored, is not made over it. Before,
// it was, and the store kept the sub-request cancelled, not isolated.
func TestStopHeldWeakerNotStoredOverStronger(t *testing.T) {
	st := &modeStops{hold: "p", release: make(chan struct{}), stops: map[string][]reach.StopMode{}}
	rt := reach.New(&reach.Options{Requests: st})
	ctx, p, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	_, s, err := rt.Delegate(ctx, &reach.Delegation{Agent: "sub", ID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.End()
	marked := make(chan struct{})
	context.AfterFunc(s.Context(), func() {
		// An A2A hand-off's task: the stop above seen, s is marked with it.
		s.StopWith(*p.StopCause())
		close(marked)
	})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.Stop(reach.Cancel, "operator", "enough")
	}()
	<-marked
	s.Stop(reach.Isolate, "operator", "isolate the sub-agent")
	if got := st.of("s"); !slices.Equal(got, []reach.StopMode{reach.Isolate}) {
		t.Fatalf("s's stops stored while p's is held: %v; want its isolation", got)
	}
	close(st.release)
	<-stopped
	if got := st.of("s"); len(got) == 0 || got[len(got)-1] != reach.Isolate {
		t.Errorf("s's stops stored %v; want the isolation last (what the store keeps)", got)
	}
	if s.State() != reach.RequestStoppedIsolate {
		t.Errorf("s is %s in memory; want isolated", s.State())
	}
}
