package callgraph

// Hash is a 64-bit FNV-1a hash. It is stable across processes, so it may be
// stored and compared between gateway instances.
type Hash uint64

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// HashBytes hashes b.
func HashBytes(b []byte) Hash { return Hash(0).Add(b) }

// HashString hashes s.
func HashString(s string) Hash { return Hash(0).AddString(s) }

// Add returns h extended by b. The zero Hash starts a new hash.
func (h Hash) Add(b []byte) Hash {
	x := uint64(h)
	if x == 0 {
		x = fnvOffset
	}
	for _, c := range b {
		x ^= uint64(c)
		x *= fnvPrime
	}
	return Hash(x)
}

// AddString returns h extended by s.
func (h Hash) AddString(s string) Hash {
	x := uint64(h)
	if x == 0 {
		x = fnvOffset
	}
	for i := 0; i < len(s); i++ {
		x ^= uint64(s[i])
		x *= fnvPrime
	}
	return Hash(x)
}

// Sep returns h extended by a separator byte that cannot occur in canonical
// JSON or in a tool name, so that ("ab","c") and ("a","bc") hash apart.
func (h Hash) Sep() Hash { return h.Add([]byte{0xff}) }

// Filter is a 256-bit Bloom filter over hashes: a frame's Filter holds the
// hashes of every frame on its stack, so "is this call already an ancestor?"
// costs two bit tests at any depth. A hit is only a maybe: confirm it by
// walking the stack. The zero Filter is empty; Filters are values, copied
// from parent to child.
type Filter [4]uint64

func bits(h Hash) (w1, b1, w2, b2 uint) {
	x := uint64(h)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return uint(x>>6) & 3, uint(x) & 63, uint(x>>14) & 3, uint(x>>8) & 63
}

// Add records h in f.
func (f *Filter) Add(h Hash) {
	w1, b1, w2, b2 := bits(h)
	f[w1] |= 1 << b1
	f[w2] |= 1 << b2
}

// MayHave reports whether h may have been added to f. False is certain.
func (f *Filter) MayHave(h Hash) bool {
	w1, b1, w2, b2 := bits(h)
	return f[w1]&(1<<b1) != 0 && f[w2]&(1<<b2) != 0
}
