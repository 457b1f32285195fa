package reach_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// heldStops is a store that holds the stop of request hold where a store
// makes it durable (RequestStopped), and keeps the order of the stops and
// ends it is told.
type heldStops struct {
	hold    string
	release chan struct{}
	mu      sync.Mutex
	told    []string
}

func (h *heldStops) RequestBegan(context.Context, *reach.Request) error { return nil }

func (h *heldStops) RequestStopped(_ context.Context, r *reach.Request, _ reach.Cause) {
	if r.ID() == h.hold {
		<-h.release
	}
	h.note("stop " + r.ID() + " " + string(r.State()))
}

func (h *heldStops) RequestEnded(_ context.Context, r *reach.Request) {
	h.note("end " + r.ID() + " " + string(r.State()))
}

func (h *heldStops) note(s string) {
	h.mu.Lock()
	h.told = append(h.told, s)
	h.mu.Unlock()
}

func (h *heldStops) records() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.told)
}

// markOnStop does what an A2A hand-off's task does as soon as its
// sub-request's context is cancelled by a stop above: it marks the
// sub-request stopped with that stop's cause, then ends it (its agent's
// stream over). done gets the request once both returned.
func markOnStop(r *reach.Request, done chan<- *reach.Request) {
	context.AfterFunc(r.Context(), func() {
		if se, ok := errors.AsType[*reach.StopError](context.Cause(r.Context())); ok && se.Cause.Request != r.ID() {
			r.StopWith(se.Cause)
		}
		r.End()
		done <- r
	})
}

// A stop of p is stored before the stops and ends of the sub-requests
// below it, however soon they are marked stopped and ended: while the
// store holds p's stop, they are stopped (in memory: they start nothing),
// and nothing of theirs is recorded; once p's stop is stored, their
// records follow, shallowest first, each one's stop before its end, and
// Stop returns after them. A kill in between leaves p stopped, or p
// running and nothing below it stored stopped by its stop.
func TestStopStoredAboveFirst(t *testing.T) {
	st := &heldStops{hold: "p", release: make(chan struct{})}
	rt := reach.New(&reach.Options{Requests: st})
	ctx, p, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	sctx, s, err := rt.Delegate(ctx, &reach.Delegation{Agent: "sub", ID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	_, g, err := rt.Delegate(sctx, &reach.Delegation{Agent: "subsub", ID: "g"})
	if err != nil {
		t.Fatal(err)
	}
	marked := make(chan *reach.Request, 2)
	markOnStop(g, marked) // the deeper one first: it is recorded after s all the same
	markOnStop(s, marked)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.Stop(reach.Cancel, "operator", "enough")
	}()
	for range 2 {
		r := <-marked
		if c := r.StopCause(); r.State() != reach.RequestStoppedCancel || c == nil || c.Request != "p" {
			t.Errorf("%s marked %s %+v; want stopped with p's cause", r.ID(), r.State(), c)
		}
	}
	if got := st.records(); len(got) != 0 {
		t.Errorf("recorded while p's stop was not stored: %v; want nothing", got)
	}
	close(st.release)
	<-stopped
	want := []string{"stop p stopped_cancel", "stop s stopped_cancel", "end s stopped_cancel", "stop g stopped_cancel", "end g stopped_cancel"}
	if got := st.records(); !slices.Equal(got, want) {
		t.Errorf("recorded %v; want %v", got, want)
	}
}

// A cause that no stop under way stands behind holds nothing: a
// sub-request cancelled by its parent's end and marked stopped with that
// end's cause, or stopped by a stop of its own while a stop of its parent
// is held, is recorded at once.
func TestStopStoredAtOnceWithoutAStopAbove(t *testing.T) {
	st := &heldStops{hold: "p", release: make(chan struct{})}
	defer close(st.release)
	rt := reach.New(&reach.Options{Requests: st})
	ctx, p, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	_, s, err := rt.Delegate(ctx, &reach.Delegation{Agent: "sub", ID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	marked := make(chan *reach.Request, 1)
	markOnStop(s, marked)
	p.End()
	<-marked
	// p's end and s's stop are told apart by nothing but the goroutines
	// that record them (s is cancelled by p's context, its stop recorded
	// from the cancel's callback while p records its end): held, neither
	// would be recorded; their order is not the point.
	want := []string{"end p completed", "end s stopped_cancel", "stop s stopped_cancel"}
	for deadline := time.Now().Add(time.Minute); len(st.records()) < len(want) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got := slices.Sorted(slices.Values(st.records())); !slices.Equal(got, want) {
		t.Errorf("recorded %v; want %v in any order", got, want)
	}
	if got := st.records(); slices.Index(got, "stop s stopped_cancel") > slices.Index(got, "end s stopped_cancel") {
		t.Errorf("recorded %v; want s's stop before its end", got)
	}

	ctx, q, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "q"})
	if err != nil {
		t.Fatal(err)
	}
	_, u, err := rt.Delegate(ctx, &reach.Delegation{Agent: "sub", ID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	u.Stop(reach.Cancel, "operator", "u only")
	u.End()
	if got := st.records(); !slices.Equal(got[len(got)-2:], []string{"stop u stopped_cancel", "end u stopped_cancel"}) || len(got) != len(want)+2 {
		t.Errorf("recorded %v; want %v in any order, then u's stop and end", got, want)
	}
	q.End()
}
