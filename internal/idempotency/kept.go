package idempotency

import (
	"sync"
	"sync/atomic"
	"time"
)

// Kept holds the completions of calls that ended while their store could
// not record them (a database down, cut off, restarting): the call ran and
// its client was answered, but the write of its result, or of the release
// of its key, failed. They are kept in memory, bounded, until they are
// written, so that a retry through this instance gets the call's result
// (not "it may have run"), and the claim the store still holds is not
// settled as interrupted meanwhile. Safe for concurrent use.
type Kept struct {
	mu    sync.Mutex
	m     map[string]KeptEntry
	bytes int
	max   int // entries
	maxB  int // bytes of results
	n     atomic.Int32
}

// KeptEntry is one kept completion.
type KeptEntry struct {
	Args    string    // the digest of the call's arguments, as claimed
	Result  []byte    // the encoded result; nil for a release of the key
	Expires time.Time // when the result stops answering the key
}

// NewKept returns a Kept of at most entries completions and bytes bytes
// of results.
func NewKept(entries, bytes int) *Kept {
	return &Kept{m: map[string]KeptEntry{}, max: entries, maxB: bytes}
}

// Keep keeps e for key and reports whether it did: false once the bounds
// are reached (the completion is then lost, as it was before Kept).
func (k *Kept) Keep(key string, e KeptEntry) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	old, had := k.m[key]
	n := k.bytes - len(old.Result) + len(e.Result)
	if (!had && len(k.m) >= k.max) || n > k.maxB {
		return false
	}
	k.m[key], k.bytes = e, n
	k.n.Store(int32(len(k.m)))
	return true
}

// Get returns the completion kept for key.
func (k *Kept) Get(key string) (KeptEntry, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.m[key]
	return e, ok
}

// Drop forgets the completion kept for key (written, or settled by another).
func (k *Kept) Drop(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.bytes -= len(k.m[key].Result)
	delete(k.m, key)
	k.n.Store(int32(len(k.m)))
}

// Keys returns the keys kept, in no order.
func (k *Kept) Keys() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]string, 0, len(k.m))
	for key := range k.m {
		out = append(out, key)
	}
	return out
}

// Entries returns the keys kept and their completions (entries[i] is
// keys[i]'s), in no order, read at one moment: a key Dropped meanwhile is
// in both or in neither (Keys then Get may find a key gone, with an empty
// entry: a completion read as a release).
func (k *Kept) Entries() (keys []string, entries []KeptEntry) {
	k.mu.Lock()
	defer k.mu.Unlock()
	keys, entries = make([]string, 0, len(k.m)), make([]KeptEntry, 0, len(k.m))
	for key, e := range k.m {
		keys, entries = append(keys, key), append(entries, e)
	}
	return keys, entries
}

// Len returns how many completions are kept: one atomic load, for the
// path of every claim.
func (k *Kept) Len() int { return int(k.n.Load()) }
