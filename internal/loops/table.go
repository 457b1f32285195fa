package loops

import (
	"hash/maphash"
	"strconv"
)

// seed keys every hash of this process. Hashes are only compared with each
// other, never stored outside the process.
var seed = maphash.MakeSeed()

func hashBytes(b []byte) uint64  { return maphash.Bytes(seed, b) }
func hashString(s string) uint64 { return maphash.String(seed, s) }

// mix combines two hashes (a splitmix64 finalizer over a, b).
func mix(a, b uint64) uint64 {
	x := a*0x9e3779b97f4a7c15 ^ b
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// callKey is the identity of a tool call: its tool and canonical arguments.
func callKey(tool string, args []byte) uint64 {
	return mix(hashString(tool), hashBytes(args))
}

// bounded is a map that remembers at most max entries: when its current half is
// full, the older half is forgotten and the current one becomes the older.
// Entries read from the older half move to the current one. The zero value
// must be init'ed. Its map is made at its first put: a request's detector
// has seven, and a request of one call (a sessionless client's under a
// crowd) uses some of them only.
type bounded[K comparable, V any] struct {
	cur, old map[K]V
	half     int
}

func (m *bounded[K, V]) init(n int) { m.half = max(n/2, 1) }

func (m *bounded[K, V]) get(k K) (V, bool) {
	if v, ok := m.cur[k]; ok {
		return v, true
	}
	if v, ok := m.old[k]; ok {
		delete(m.old, k)
		m.put(k, v)
		return v, true
	}
	var zero V
	return zero, false
}

func (m *bounded[K, V]) put(k K, v V) {
	if m.cur == nil {
		m.cur = make(map[K]V)
	}
	// The length first: the current half is seldom full, and a new key's
	// put (checkTool's, after a get that missed) need not look it up again.
	if len(m.cur) >= m.half {
		if _, ok := m.cur[k]; ok {
			m.cur[k] = v
			return
		}
		m.old = m.cur
		m.cur = make(map[K]V, m.half/4)
	}
	m.cur[k] = v
}

func (m *bounded[K, V]) len() int { return len(m.cur) + len(m.old) }

// preview returns at most previewLen bytes of b as a string, marking a cut.
func preview(b []byte) string {
	if len(b) <= previewLen {
		return string(b)
	}
	n := previewLen
	for n > 0 && b[n]&0xC0 == 0x80 { // do not cut a UTF-8 sequence
		n--
	}
	return string(b[:n]) + "…"
}

// appendPreview appends preview(b) to dst.
func appendPreview(dst, b []byte) []byte {
	if len(b) <= previewLen {
		return append(dst, b...)
	}
	n := previewLen
	for n > 0 && b[n]&0xC0 == 0x80 {
		n--
	}
	return append(append(dst, b[:n]...), "…"...)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// ordinal returns "1st", "2nd", "3rd", "4th" ...
func ordinal(n int) string {
	s := itoa(int64(n))
	if n%100 >= 11 && n%100 <= 13 {
		return s + "th"
	}
	switch n % 10 {
	case 1:
		return s + "st"
	case 2:
		return s + "nd"
	case 3:
		return s + "rd"
	}
	return s + "th"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return itoa(int64(n)) + " " + many
}

// hashSet remembers 64-bit hashes, at most max of them. It is a table of
// buckets of four slots that doubles as it fills, up to max slots; once there,
// a hash that lands in a full bucket replaces one of its four. Forgetting only
// makes a piece of content look new again. The zero value must be init'ed.
type hashSet struct {
	slots []uint64 // len is a power of two, a multiple of 4; 0 marks a free slot
	n     int      // slots in use
	max   int      // most slots, a power of two
}

const minSetSlots = 64

func (h *hashSet) init(max int) {
	h.max = minSetSlots
	for h.max*2 <= max {
		h.max *= 2
	}
}

// add inserts x and reports whether it was absent.
func (h *hashSet) add(x uint64) bool {
	if x == 0 {
		x = 1
	}
	if h.slots == nil {
		h.slots = make([]uint64, minSetSlots)
	}
	b := h.bucket(x)
	for i, y := range b {
		switch y {
		case x:
			return false
		case 0:
			b[i] = x
			h.n++
			if h.n*2 > len(h.slots) && len(h.slots) < h.max {
				h.grow()
			}
			return true
		}
	}
	if len(h.slots) < h.max {
		// A full bucket while there is room to grow: grow rather than
		// forget a piece (which bucket fills first depends on the
		// process's hash seed, so forgetting early made detection vary
		// from run to run).
		h.grow()
		return h.add(x)
	}
	b[x>>62] = x // full bucket at the size bound: replace one
	return true
}

func (h *hashSet) bucket(x uint64) []uint64 {
	i := int(x>>7) & (len(h.slots)/4 - 1) * 4
	return h.slots[i : i+4 : i+4]
}

func (h *hashSet) grow() {
	old := h.slots
	h.slots = make([]uint64, 2*len(old))
	h.n = 0
	for _, x := range old {
		if x == 0 {
			continue
		}
		b := h.bucket(x)
		for i, y := range b {
			if y == 0 {
				b[i] = x
				h.n++
				break
			}
		}
	}
}

func (h *hashSet) len() int { return h.n }
