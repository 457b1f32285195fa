package records

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/frames"
)

func pastIDs(fs []PastFrame) string {
	s := ""
	for _, f := range fs {
		s += fmt.Sprint(uint64(f.ID), " ")
	}
	return s
}

// TestSortPastParentsFirst: frames come in start order, but a child dated
// before its parent (a start computed as end less latency) comes after
// it; frames with no parent in the list keep their place in start order.
func TestSortPastParentsFirst(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fs := []PastFrame{
		{ID: 4, Started: t0.Add(4 * time.Millisecond)},
		{ID: 3, Parent: 2, Started: t0.Add(time.Millisecond - time.Microsecond)}, // dated before its parent
		{ID: 2, Parent: 1, Started: t0.Add(time.Millisecond)},
		{ID: 1, Started: t0},
		{ID: 5, Parent: 99, Started: t0.Add(-time.Millisecond)}, // its parent is not in the list
	}
	SortPast(fs)
	if got := pastIDs(fs); got != "5 1 2 3 4 " {
		t.Errorf("SortPast: %s, want 5 1 2 3 4 (start order, every frame after its parent)", got)
	}
	// Already in order: unchanged.
	SortPast(fs)
	if got := pastIDs(fs); got != "5 1 2 3 4 " {
		t.Errorf("SortPast again: %s", got)
	}
}

// TestSortPastLoop: a parent chain that loops (edited records) ends and
// keeps every frame once.
func TestSortPastLoop(t *testing.T) {
	t0 := time.Now()
	fs := []PastFrame{
		{ID: 1, Parent: 2, Started: t0},
		{ID: 2, Parent: 1, Started: t0.Add(time.Millisecond)},
		{ID: 3, Parent: 3, Started: t0.Add(-time.Millisecond)},
	}
	SortPast(fs)
	seen := map[frames.ID]int{}
	for _, f := range fs {
		seen[f.ID]++
	}
	if len(fs) != 3 || seen[1] != 1 || seen[2] != 1 || seen[3] != 1 {
		t.Errorf("SortPast of a loop: %s, want each of 1, 2, 3 once", pastIDs(fs))
	}
}
