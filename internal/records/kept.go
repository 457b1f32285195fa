package records

import (
	"slices"
	"sync"
)

// Kept is the requests a runtime keeps for inspection, by id and in the
// order they began: running, ended (the newest ones, up to a maximum) and
// restored from an earlier run. R is the runtime's request. Safe for
// concurrent use; make one with NewKept.
type Kept[R comparable] struct {
	max   int
	id    func(R) string
	ended func(R) bool

	mu    sync.Mutex
	byID  map[string]R
	order []R // begin order, for listing
	// next is the length of order past which Add forgets ended requests
	// again: twice the maximum, or twice what the last time kept when
	// that was more (requests still running are kept), so that a crowd
	// of running requests is scanned once as it doubles, not on every Add.
	next int
}

// NewKept returns an empty Kept that keeps max ended requests, with how
// to read a request's id and whether it ended.
func NewKept[R comparable](max int, id func(R) string, ended func(R) bool) *Kept[R] {
	return &Kept[R]{max: max, id: id, ended: ended, byID: map[string]R{}, next: 2 * max}
}

// Add keeps r in place of the request of its id, once check (given that
// request, and whether there is one) lets it: an error of check is
// returned, and nothing kept. Past twice the maximum, the oldest ended
// requests beyond it are forgotten.
func (k *Kept[R]) Add(r R, check func(old R, ok bool) error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	old, ok := k.byID[k.id(r)]
	if err := check(old, ok); err != nil {
		return err
	}
	k.byID[k.id(r)] = r
	k.order = append(k.order, r)
	if len(k.order) > k.next {
		keep := k.order[:0]
		excess := len(k.order) - k.max
		for _, q := range k.order {
			if excess > 0 && k.ended(q) {
				excess--
				if k.byID[k.id(q)] == q {
					delete(k.byID, k.id(q))
				}
				continue
			}
			keep = append(keep, q)
		}
		clear(k.order[len(keep):])
		k.order = keep
		k.next = 2 * max(k.max, len(keep))
	}
	return nil
}

// AddNew keeps r unless a request of its id is kept: that one is
// returned, else r.
func (k *Kept[R]) AddNew(r R) R {
	k.mu.Lock()
	defer k.mu.Unlock()
	if old, ok := k.byID[k.id(r)]; ok {
		return old
	}
	k.byID[k.id(r)] = r
	k.order = append(k.order, r)
	return r
}

// Remove forgets r (one that began but was refused).
func (k *Kept[R]) Remove(r R) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.byID[k.id(r)] == r {
		delete(k.byID, k.id(r))
	}
	if i := slices.Index(k.order, r); i >= 0 {
		k.order = slices.Delete(k.order, i, i+1)
	}
}

// Get returns the request of that id.
func (k *Kept[R]) Get(id string) (R, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	r, ok := k.byID[id]
	return r, ok
}

// List returns the requests kept, newest first.
func (k *Kept[R]) List() []R {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]R, 0, len(k.order))
	for _, r := range slices.Backward(k.order) {
		if k.byID[k.id(r)] == r {
			out = append(out, r)
		}
	}
	return out
}
