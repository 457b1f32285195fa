package reach

import (
	"math/rand/v2"
	"testing"
)

// idSet answers as a map would, with lookups between adds and ids added
// twice, and holds an id in 8 bytes (a map held about 70).
func TestIDSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var s idSet
	in := map[FrameID]bool{}
	for i := range 5000 {
		id := FrameID(r.Uint64() % 20000) // some added twice
		s.add(id)
		in[id] = true
		if i%97 == 0 {
			for range 50 {
				q := FrameID(r.Uint64() % 20000)
				if got := s.has(q); got != in[q] {
					t.Fatalf("after %d adds, has(%d) = %v, want %v", i+1, q, got, in[q])
				}
			}
		}
	}
	for id := range in {
		if !s.has(id) {
			t.Fatalf("has(%d) = false for an added id", id)
		}
	}
	if s.has(FrameID(1 << 40)) {
		t.Fatal("has answers true for an id never added")
	}
	if got := cap(s.ids) * 8; got > 2*8*len(in)+64*8 {
		t.Errorf("the set holds %d ids in %d bytes", len(in), got)
	}
}
