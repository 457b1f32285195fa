package sqlcore

import (
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// flightClaim is the claim of a call in flight, as ClaimKey's write is
// marked.
func flightClaim() *Write {
	w := claimWrite()
	w.flight = true
	return w
}

// holding starts a writer on a fake engine that holds a batch up to hold.
func holding(t *testing.T, hold time.Duration) (*Writer, *fakeEngine) {
	t.Helper()
	e := &fakeEngine{commits: make(chan error, 100), hold: hold}
	wr := StartWriter(e, slog.New(slog.DiscardHandler))
	t.Cleanup(wr.Stop)
	return wr, e
}

// crowd sends n claims of calls in flight: the first alone, and once the
// writer waits (held, after which first runs), the others together.
func crowd(t *testing.T, wr *Writer, n int, first func()) {
	var wg sync.WaitGroup
	claim := func() {
		if err := wr.Do(t.Context(), flightClaim()); err != nil {
			t.Error(err)
		}
	}
	wg.Go(claim)
	synctest.Wait()
	first()
	for range n - 1 {
		wg.Go(claim)
	}
	wg.Wait()
}

// TestWriterHoldsForCallsInFlight: under a crowd (eight calls in flight),
// a claim's batch is held open for the other calls' claims, and ends as
// soon as every call in flight has its claim in it: one commit, at once,
// not at the end of the hold. The writes are waited for by the writer's
// goroutine, not committed by their callers one by one.
func TestWriterHoldsForCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wr, e := holding(t, time.Minute)
		const n = 8
		for range n {
			defer wr.CallBegan().End()
		}
		start := time.Now()
		crowd(t, wr, n, func() {
			if got := len(e.commits); got != 0 {
				t.Errorf("the first claim committed alone (%d commits); want it held for the others", got)
			}
		})
		if got := len(e.commits); got != 1 {
			t.Errorf("%d claims of the %d calls in flight took %d commits, want 1", n, n, got)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the batch was held %v; want it to end once every call in flight was in it", d)
		}
	})
}

// TestWriterHoldsNotOneAtATime: with fewer than holdSiblings other calls
// in flight, nothing is held: a claim commits at once, as its caller's
// own batch.
func TestWriterHoldsNotOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wr, e := holding(t, time.Minute)
		for range holdSiblings {
			defer wr.CallBegan().End() // the claim's own call, and three others
		}
		start := time.Now()
		if err := wr.Do(t.Context(), flightClaim()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 0 || wr.holds.Load() != 0 || len(e.commits) != 1 {
			t.Errorf("a claim with %d others in flight waited %v in %d holds; want none", holdSiblings-1, d, wr.holds.Load())
		}
	})
}

// TestWriterHoldEndsWhenNoWriteComes: calls in flight that do not write
// (a tool that takes seconds, or a call whose end was never told, so that
// the count is too high for good) hold a claim's batch only HoldIdle, not
// the whole hold; and a hold that no write joined makes the next
// batches commit without one, so that a run of claims pays for few holds.
// Without the idle end each claim waits the hold (a minute here); without
// the cooling, each waits HoldIdle.
func TestWriterHoldEndsWhenNoWriteComes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wr, e := holding(t, time.Minute)
		for range 16 {
			wr.CallBegan() // never ended
		}
		start := time.Now()
		const claims = 10
		for range claims {
			if err := wr.Do(t.Context(), flightClaim()); err != nil {
				t.Fatal(err)
			}
		}
		holds := wr.holds.Load()
		if d := time.Since(start); d != time.Duration(holds)*HoldIdle {
			t.Errorf("%d claims waited %v in %d holds; want HoldIdle (%v) each", claims, d, holds, HoldIdle)
		}
		// Held: the 1st, 3rd and 6th (then 1, 2 and 4 batches without).
		if holds != 3 || len(e.commits) != claims {
			t.Errorf("%d claims: %d holds, %d commits; want 3 holds, %d commits", claims, holds, len(e.commits), claims)
		}
	})
}

// TestWriterHoldPaysAgain: a hold that a write joined resets the
// cooling: after a run of idle holds, a crowd that writes is held for
// again at once.
func TestWriterHoldPaysAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wr, e := holding(t, time.Minute)
		idle := make([]*Flight, 8)
		for i := range idle {
			idle[i] = wr.CallBegan()
		}
		for range 3 { // held, not, held: two batches to go without
			if err := wr.Do(t.Context(), flightClaim()); err != nil {
				t.Fatal(err)
			}
		}
		if c := wr.cool.Load(); c != 2 {
			t.Fatalf("after two idle holds, %d batches to go without; want 2", c)
		}
		for range 2 {
			if err := wr.Do(t.Context(), flightClaim()); err != nil {
				t.Fatal(err)
			}
		}
		// The idle calls end; eight that write begin.
		for _, f := range idle {
			f.End()
		}
		const n = 8
		for range n {
			defer wr.CallBegan().End()
		}
		commits := len(e.commits)
		crowd(t, wr, n, func() {})
		if got := len(e.commits) - commits; got != 1 {
			t.Errorf("the crowd's %d claims took %d commits, want 1", n, got)
		}
		if c := wr.cool.Load(); c != 0 || wr.coolNext != 0 {
			t.Errorf("after a hold that paid: cool %d, next %d; want 0, 0", c, wr.coolNext)
		}
	})
}

// TestWriterHoldEndsOnStop: a held batch commits when the writer stops,
// without waiting for the calls in flight.
func TestWriterHoldEndsOnStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &fakeEngine{commits: make(chan error, 10), hold: time.Minute}
		old := HoldIdle
		HoldIdle = time.Minute
		defer func() { HoldIdle = old }()
		wr := StartWriter(e, slog.New(slog.DiscardHandler))
		for range 8 {
			wr.CallBegan()
		}
		done := make(chan error, 1)
		go func() { done <- wr.Do(t.Context(), flightClaim()) }()
		synctest.Wait() // held
		start := time.Now()
		wr.Stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 0 || len(e.commits) != 1 {
			t.Errorf("Stop: the held claim committed after %v (%d commits); want at once", d, len(e.commits))
		}
	})
}

// TestFlightEndsOnce: a Flight ended twice counts once.
func TestFlightEndsOnce(t *testing.T) {
	wr, _ := holding(t, time.Millisecond)
	f, g := wr.CallBegan(), wr.CallBegan()
	f.End()
	f.End()
	if n := wr.InFlight(); n != 1 {
		t.Errorf("in flight after one of two ended twice: %d, want 1", n)
	}
	g.End()
	var none *Flight
	none.End() // a key without a flight
	if n := wr.InFlight(); n != 0 {
		t.Errorf("in flight after both ended: %d, want 0", n)
	}
}
