package reach

import (
	"context"
	"slices"
	"sync"
)

// stopWaits are the calls waiting for an approval, by request. A stop of
// the request, of any mode, ends each one's wait: a soft stop lets tools
// already running finish and starts no other, so the call would be
// refused once approved (execute); it is refused at once instead, rather
// than holding its agent for the rest of the approval's wait
// (approvals.wait in reach serve). A Request has no room for a channel of
// its own (TestCallSizeClass): the waits are kept here, while they last.
type stopWaits struct {
	mu sync.Mutex
	by map[*Request][]*context.CancelFunc
}

// until returns ctx, ended as well when r is stopped, and the function
// that lets it go, to be called once the wait is over.
func (w *stopWaits) until(ctx context.Context, r *Request) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	w.mu.Lock()
	if w.by == nil {
		w.by = map[*Request][]*context.CancelFunc{}
	}
	p := &cancel
	w.by[r] = append(w.by[r], p)
	w.mu.Unlock()
	// A stop marked before the wait was kept here woke nothing: it is
	// seen now. One marked after wakes it (stopMarked marks, then wakes).
	if r.stopped() != nil {
		cancel()
	}
	return ctx, func() {
		w.mu.Lock()
		ws := w.by[r]
		for i, q := range ws {
			if q == p {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(w.by, r)
		} else {
			w.by[r] = ws
		}
		w.mu.Unlock()
		cancel()
	}
}

// wake ends the waits of r's calls.
func (w *stopWaits) wake(r *Request) {
	w.mu.Lock()
	ws := slices.Clone(w.by[r]) // done changes the list in place
	w.mu.Unlock()
	for _, cancel := range ws {
		(*cancel)()
	}
}
