package cluster

import (
	"sync"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/modelproxy"
)

// holdWaits are this instance's model turns that wait for a hold on the
// shared ledger to be let go (WatchHolds), by the requests whose ledgers
// they wait on: a signal "unhold" of one of them (any instance's Unhold,
// LISTEN/NOTIFY) wakes them, and so does the listener's connecting again
// (it may have missed one). Zero value ready.
type holdWaits struct {
	mu sync.Mutex
	by map[string]map[*holdWait]struct{}
}

// holdWait is one waiting turn's watch.
type holdWait struct {
	ch   chan struct{}
	ids  []string
	once sync.Once
}

func (w *holdWait) wake() { w.once.Do(func() { close(w.ch) }) }

// WatchHolds implements modelproxy.HoldWatcher: wake is closed once a
// model turn of any instance lets go of its hold on the ledger of req or
// of a request above it (or once the listener connected again, having
// perhaps missed that), and stop ends the watch. Call it before asking
// for the hold (HoldTurn): a hold let go after the store's answer then
// wakes the turn.
func (c *Cluster) WatchHolds(req *reach.Request) (wake <-chan struct{}, stop func()) {
	chain := c.ledgerChain(req)
	w := &holdWait{ch: make(chan struct{}), ids: make([]string, len(chain))}
	for i, l := range chain {
		w.ids[i] = l.id
	}
	h := &c.holdWaits
	h.mu.Lock()
	if h.by == nil {
		h.by = map[string]map[*holdWait]struct{}{}
	}
	for _, id := range w.ids {
		m := h.by[id]
		if m == nil {
			m = map[*holdWait]struct{}{}
			h.by[id] = m
		}
		m[w] = struct{}{}
	}
	h.mu.Unlock()
	return w.ch, func() { h.drop(w) }
}

// drop ends w's watch.
func (h *holdWaits) drop(w *holdWait) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range w.ids {
		if m := h.by[id]; m != nil {
			delete(m, w)
			if len(m) == 0 {
				delete(h.by, id)
			}
		}
	}
}

// letGo wakes the turns waiting on request id's ledger.
func (h *holdWaits) letGo(id string) {
	h.mu.Lock()
	var ws []*holdWait
	for w := range h.by[id] {
		ws = append(ws, w)
	}
	h.mu.Unlock()
	for _, w := range ws {
		w.wake()
	}
}

// all wakes every waiting turn: the listener connected again and may
// have missed a hold let go meanwhile.
func (h *holdWaits) all() {
	h.mu.Lock()
	var ws []*holdWait
	for _, m := range h.by {
		for w := range m {
			ws = append(ws, w)
		}
	}
	h.mu.Unlock()
	for _, w := range ws {
		w.wake()
	}
}

// waiting is how many turns watch holds (tests).
func (h *holdWaits) waiting() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[*holdWait]bool{}
	for _, m := range h.by {
		for w := range m {
			seen[w] = true
		}
	}
	return len(seen)
}

var _ modelproxy.HoldWatcher = (*Cluster)(nil)
