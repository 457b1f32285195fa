package records

import (
	"slices"

	"github.com/agentreach/reach/internal/frames"
)

// SortPast orders fs as a call graph is rebuilt from them: by start, and
// every frame after its parent when fs holds it. A stored frame's start
// is its end less its latency (wall clock less monotonic time): a child
// that began microseconds after its parent may be dated before it, and a
// rebuild that links each frame to the parents it has already built
// would lose that child's parent. A parent chain that loops (edited
// records) keeps the start order.
func SortPast(fs []PastFrame) {
	slices.SortStableFunc(fs, func(a, b PastFrame) int { return a.Started.Compare(b.Started) })
	at := make(map[frames.ID]int, len(fs))
	for i := range fs {
		at[fs[i].ID] = i
	}
	moved := false
	for i := range fs {
		if p, ok := at[fs[i].Parent]; ok && p > i && fs[i].Parent != 0 {
			moved = true
			break
		}
	}
	if !moved {
		return
	}
	// Place each frame after its ancestors in fs, in start order.
	out := make([]PastFrame, 0, len(fs))
	state := make([]uint8, len(fs)) // 0: not placed, 1: being placed, 2: placed
	var place func(i int)
	place = func(i int) {
		if state[i] != 0 {
			return // placed, or a loop: its start order stands
		}
		state[i] = 1
		if p, ok := at[fs[i].Parent]; ok && fs[i].Parent != 0 {
			place(p)
		}
		state[i] = 2
		out = append(out, fs[i])
	}
	for i := range fs {
		place(i)
	}
	copy(fs, out)
}
