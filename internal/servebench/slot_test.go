package servebench

import "testing"

// Over n iterations, every path is called once in every place of the
// order, and once in each iteration.
func TestSlotRotates(t *testing.T) {
	const n = 7
	var at [n][n]int // at[path][place]
	for k := range n {
		var seen [n]bool
		for j := range n {
			i := slot(k, j, n)
			if seen[i] {
				t.Fatalf("iteration %d calls path %d twice", k, i)
			}
			seen[i] = true
			at[i][j]++
		}
	}
	for i := range n {
		for j := range n {
			if at[i][j] != 1 {
				t.Errorf("path %d is called %d times in place %d over %d iterations, want 1", i, at[i][j], j, n)
			}
		}
	}
}
