package reach

import (
	"slices"
	"sync"
)

// A live stop stores the request it was made on stopped before the
// requests below it that it stops (docs/STATE.md): a kill in between
// leaves the request stopped, whose restart stops the ones below it too,
// and never the request above running (then interrupted) under one stored
// stopped by its stop. The requests below see the stop first as their
// contexts' cause (an A2A hand-off's task marks its hand-off stopped as
// soon as it does, so that the hand-off does not end completed meanwhile),
// and may be marked stopped, or end, while the request above is not yet
// stored stopped: what they would store then (their stop, an end that
// records them stopped) waits on that request, which stores it once its
// own stop is stored, shallowest first. Nothing blocks: a request marked
// stopped is stopped at once in memory, only its record comes later. A
// stop's record held while a stronger stop of the request's own was
// stored is not made (superseded): it would replace the stronger one.

// stopOrder orders the records of a request's stops before those of the
// requests below it that they cause.
type stopOrder struct {
	mu       sync.Mutex
	stopping StopMode    // the strongest stop of the request's own under way
	stored   StopMode    // the strongest of them its store holds (or that failed)
	after    []stopWrite // records below waiting for a stop to be stored
}

// stopWrite is a record of a request below, held until a stop of mode at
// least mode is stored.
type stopWrite struct {
	mode  StopMode
	depth int  // of the request that records it
	end   bool // its end's record (after its stop's, at one depth)
	write func()
}

// begin notes a stop of mode m under way (before it cancels a context).
func (o *stopOrder) begin(m StopMode) {
	o.mu.Lock()
	o.stopping = max(o.stopping, m)
	o.mu.Unlock()
}

// hold keeps w until a stop of mode w.mode is stored, if one is under way
// and not stored yet, and reports whether it did.
func (o *stopOrder) hold(w stopWrite) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopping < w.mode || o.stored >= w.mode {
		return false
	}
	o.after = append(o.after, w)
	return true
}

// done notes a stop of mode m stored (or its store's attempt over) and
// makes the records it held, shallowest first, a stop before an end.
func (o *stopOrder) done(m StopMode) {
	o.mu.Lock()
	o.stored = max(o.stored, m)
	var run []stopWrite
	kept := o.after[:0]
	for _, w := range o.after {
		if w.mode <= o.stored {
			run = append(run, w)
		} else {
			kept = append(kept, w)
		}
	}
	clear(o.after[len(kept):])
	o.after = kept
	o.mu.Unlock()
	slices.SortStableFunc(run, func(a, b stopWrite) int {
		if a.depth != b.depth {
			return a.depth - b.depth
		}
		switch {
		case a.end == b.end:
			return 0
		case b.end:
			return -1
		}
		return 1
	})
	for _, w := range run {
		w.write()
	}
}

// superseded says whether a stop stronger than m is stored already (or its
// store's attempt over): the record of a stop of mode m, made after it
// (held), would replace it.
func (o *stopOrder) superseded(m StopMode) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stored > m
}

// afterAbove holds write, a record of r stopped by c, until the request
// above r that c was made on has stored its stop, if that stop is under
// way here and not stored yet; it reports whether it held it. A cause
// made on r itself, on no request of r's here (another instance's, read
// from the store, stored there), or by an end (no stop under way) holds
// nothing.
func (r *Request) afterAbove(c Cause, end bool, write func()) bool {
	if c.Request == r.id {
		return false
	}
	depth := 0
	for a := r.parent; a != nil; a = a.parent {
		depth++
	}
	for a := r.parent; a != nil; a = a.parent {
		if a.id == c.Request {
			return a.order.hold(stopWrite{mode: c.Mode, depth: depth, end: end, write: write})
		}
	}
	return false
}
