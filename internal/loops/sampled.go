package loops

// sampled reports whether a write made again has been seen to answer by
// chance: among the agent's calls in w (newest first), three of its calls
// in a row (same(e) tells which are its calls), no other write between
// them, answered A, then B, then A again. A command that flips so, with nothing
// else written, draws its answer from something the agent does not
// change (a flaky test, a race): running it again samples it, and a run of
// like answers is what sampling brings, not a sign that nothing can
// change. The run it may make is twice the usual one (as long as the
// agent's ring holds, so that it can still be refused).
func sampled(w []*entry, same func(*entry) bool) bool {
	var seen [3]*entry // its last calls, newest first, no other write between
	n := 0
	for _, e := range w {
		if !same(e) {
			if e.write {
				n = 0 // another write: what its calls answered may differ for it
			}
			continue
		}
		if !e.done || e.transient {
			n = 0
			continue
		}
		if n == len(seen) {
			seen[0], seen[1] = seen[1], seen[2]
			n--
		}
		seen[n] = e
		n++
		if n == 3 && seen[0].res == seen[2].res && seen[0].res != seen[1].res {
			return true
		}
	}
	return false
}
