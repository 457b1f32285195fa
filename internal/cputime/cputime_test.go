package cputime

import "testing"

// Spinning takes CPU time, and Self sees it grow.
func TestSelfGrows(t *testing.T) {
	before := Self()
	x := 0
	for i := range 50_000_000 {
		x ^= i
	}
	if after := Self(); after <= before {
		t.Errorf("Self() = %v after spinning (x=%d), was %v; want it to grow", after, x, before)
	}
}
