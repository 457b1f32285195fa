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

// Over a whole square (n iterations for an even n, 2n for an odd one),
// every path is called in every place equally often, and right after
// every other path equally often: no path is always the one after
// direct.
func TestSlotBalancesPredecessors(t *testing.T) {
	for n := 2; n <= 9; n++ {
		rows := n
		if n%2 == 1 {
			rows = 2 * n
		}
		at := make([][]int, n)    // at[path][place]
		after := make([][]int, n) // after[prev][path]
		for i := range n {
			at[i], after[i] = make([]int, n), make([]int, n)
		}
		for k := range rows {
			seen := make([]bool, n)
			prev := -1
			for j := range n {
				i := slot(k, j, n)
				if i < 0 || i >= n || seen[i] {
					t.Fatalf("n=%d: iteration %d calls path %d twice or out of range", n, k, i)
				}
				seen[i] = true
				at[i][j]++
				if prev >= 0 {
					after[prev][i]++
				}
				prev = i
			}
		}
		for i := range n {
			for j := range n {
				if at[i][j] != rows/n {
					t.Errorf("n=%d: path %d in place %d %d times, want %d", n, i, j, at[i][j], rows/n)
				}
				if i != j && after[i][j] != rows/n {
					t.Errorf("n=%d: path %d right after path %d %d times, want %d", n, j, i, after[i][j], rows/n)
				}
			}
		}
	}
}
