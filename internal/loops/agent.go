package loops

import (
	"math/bits"
	"strings"
)

// agentState is what the detectors remember about one agent: its recent calls
// ("short_cycle") and its run of results that brought nothing new
// ("no_progress").
type agentState struct {
	name string
	id   uint64 // hash of name, mixed into the result pieces it has seen

	ring []entry // the last calls it dispatched, a ring buffer
	head int     // next slot to write once the ring is full

	// Results judged for "no_progress" since the last write (staleEpoch):
	stale      int    // in a row that brought nothing new
	hist       uint64 // one bit each, newest lowest: 1 brought nothing new
	judged     int    // how many
	staleEpoch uint64
	staleTools [4]string // tools of the last results that brought nothing new
	nstale     int

	writes   uint64 // successful writes and high-risk calls it made
	writeAns uint64 // the answer of the last of them, as flipRing keeps it
	reads    uint64 // successful calls of other tools it made

	// The last delegation verdicts it received, newest at recv[nrecv-1]
	// once the ring has wrapped as before it: rounds.go reads them.
	recv  [maxRecv]verdict
	nrecv uint64 // verdicts received
	turns uint32 // model calls it made: which turn a hand-off of its was made in
	// handed is the last sub-task handed to it (taskKey with no receiver),
	// 0 for none: what it is working on when it is on a hand-off's chain
	handed uint64

	pushes, writePush uint64 // calls pushed on the ring; the number of the last write's push
}

// entry is one dispatched tool call in an agent's ring.
type entry struct {
	seq, key, res, epoch uint64
	fold                 uint64 // a write's arguments respelled (Step.fold)
	tmpl                 uint64 // its answer's template (countedAnswer), with a write in the ring
	counts               counts // and its counted numbers
	tool                 string
	write                bool // a write or high-risk call
	done                 bool // its outcome is known
	transient            bool // it failed with a transient error
	gone                 bool // it was refused after all
	// a write's arguments without its descriptions (Step.refFold), in
	// 32 bits: compared only among the agent's last few calls, it fits
	// where the flags above leave room
	refFold uint32
}

// ringSize is how many calls an agent's ring holds: enough for the longest
// cycle going round as often as the detector requires.
func ringSize(c config) int {
	return max(c.cyclePeriod*max(c.cycleRepeats, c.writeCycleRepeats), 1)
}

func (a *agentState) push(e entry) {
	a.pushes++
	if e.write {
		a.writePush = a.pushes
	}
	if len(a.ring) < cap(a.ring) {
		a.ring = append(a.ring, e)
		return
	}
	a.ring[a.head] = e
	a.head = (a.head + 1) % len(a.ring)
}

// writeInRing reports whether one of the calls in the agent's ring is a
// write (refused or not): only then can a call be part of a write cycle.
func (a *agentState) writeInRing() bool {
	return a.writePush > 0 && a.pushes-a.writePush < uint64(cap(a.ring))
}

// find returns the ring entry of dispatch number seq, or nil.
func (a *agentState) find(seq uint64) *entry {
	for i := range a.ring {
		if a.ring[i].seq == seq {
			return &a.ring[i]
		}
	}
	return nil
}

// recent fills w with the live entries, newest first, and returns how many.
func (a *agentState) recent(w []*entry) int {
	if len(a.ring) == 0 {
		return 0
	}
	n := 0
	i := (a.head - 1 + len(a.ring)) % len(a.ring) // the newest
	for k := 0; k < len(a.ring) && n < len(w); k++ {
		if e := &a.ring[i]; !e.gone {
			w[n] = e
			n++
		}
		if i--; i < 0 {
			i = len(a.ring) - 1
		}
	}
	return n
}

// among reports whether one of the agent's last n live calls (recent's
// first n) is the call of key key.
func (a *agentState) among(key uint64, n int) bool {
	if len(a.ring) == 0 {
		return false
	}
	i := (a.head - 1 + len(a.ring)) % len(a.ring)
	for k, live := 0, 0; k < len(a.ring) && live < n; k++ {
		if e := &a.ring[i]; !e.gone {
			if e.key == key {
				return true
			}
			live++
		}
		if i--; i < 0 {
			i = len(a.ring) - 1
		}
	}
	return false
}

// judge records that a result brought nothing new (stale) or something new,
// while the write epoch was epoch.
func (a *agentState) judge(stale bool, tool string, epoch uint64) {
	if a.staleEpoch != epoch {
		a.stale, a.hist, a.judged, a.staleEpoch = 0, 0, 0, epoch
	}
	a.hist <<= 1
	a.judged++
	if !stale {
		a.stale = 0
		return
	}
	a.hist |= 1
	a.stale++
	a.staleTools[a.nstale%len(a.staleTools)] = tool
	a.nstale++
}

// noProgress reports whether the agent's recent results, with no write since,
// brought nothing new: the last steps of them in a row, or three quarters of
// the last 2*steps with the last one among them. It returns how many of how
// many.
func (a *agentState) noProgress(steps int, epoch uint64) (n, of int, ok bool) {
	if steps <= 0 || a.staleEpoch != epoch {
		return 0, 0, false
	}
	if a.stale >= steps {
		return a.stale, a.stale, true
	}
	w := min(2*steps, 64)
	if a.judged < w || a.hist&1 == 0 {
		return 0, 0, false
	}
	n = bits.OnesCount64(a.hist & (1<<w - 1))
	return n, w, 4*n >= 3*w
}

// who names the agent in a message the model reads: "the agent" for a
// request's own (main) agent, whose name is only its client library's,
// else "agent NAME" (a sub-agent's, as configured).
func (a *agentState) who() string {
	if a.name == "main" {
		return "the agent"
	}
	return "agent " + a.name
}

// upper capitalizes s's first letter (ASCII).
func upper(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// staleList names the tools of the last results that brought nothing new,
// oldest first.
func (a *agentState) staleList() string {
	n := min(a.nstale, len(a.staleTools))
	var b strings.Builder
	for k := n; k > 0; k-- {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.staleTools[(a.nstale-k)%len(a.staleTools)])
	}
	if a.nstale > n {
		return "…, " + b.String()
	}
	return b.String()
}

// checkCycle refuses s when it would start another round of a cycle of the
// agent's recent calls in which every call returned, each round, what it had
// returned the round before.
func (d *Detector) checkCycle(a *agentState, s *Step) *Verdict {
	c := &d.cfg
	if c.cyclePeriod == 0 || (c.cycleRepeats == 0 && c.writeCycleRepeats == 0) {
		return nil
	}
	// A cycle of period p that this call would start again has it for
	// the agent's p-th last call: when none of the last cyclePeriod is
	// this call (most calls), there is no cycle to look for, and the
	// window is not gathered.
	if !a.among(s.key, c.cyclePeriod) && s.fold == 0 {
		return nil
	}
	var buf [maxPeriodCap * maxRepeatCap]*entry
	w := buf[:a.recent(buf[:])]
	if v := d.checkWriteRespelled(a, s, w); v != nil {
		return v
	}
	for p := 1; p <= c.cyclePeriod && p <= len(w); p++ {
		// A write made again respelled alone is checkWriteRespelled's
		// (above); in a longer cycle it is the same write.
		if w[p-1].key != s.key && (p == 1 || s.fold == 0 || w[p-1].fold != s.fold) {
			continue
		}
		write := false
		for _, e := range w[:p] {
			write = write || e.write
		}
		reps := c.cycleRepeats
		if write {
			reps = c.writeCycleRepeats
			if p == 1 && sampled(w, func(e *entry) bool { return e.write && e.key == s.key }) {
				reps = min(2*reps, cap(a.ring))
			}
		} else if p == 1 {
			continue // a single repeated read is "repeat"'s to judge
		}
		if reps == 0 || p*reps > len(w) {
			continue
		}
		ok, moved := cycles(w, p, reps, write)
		if !ok || write && isWrite(s.Access) && d.setOtherwise(a, s) {
			continue
		}
		returned := "each call returned what it had returned the round before"
		if moved {
			returned = "each call returned what it had returned the round before but for a count, a stamp or an id moved by the write"
		}
		oldest := w[p*reps-1]
		if !write && !d.quiet(oldest.seq, oldest.epoch) {
			continue
		}
		same := "with the same arguments"
		for i := 0; i+p < p*reps; i++ {
			if w[i].key != w[i+p].key {
				same = "with the same arguments, its writes in other spellings (an element under a renumbered ref, a value respelled)"
				break
			}
		}
		return &Verdict{
			Detector: "short_cycle",
			Message: upper(a.who()) + " went " + plural(reps, "time", "times") + " round the same cycle of calls (" +
				cycleNames(w[:p]) + ") " + same + ", and " + returned + "; " + s.Tool + " " + preview(s.Args) + " would start the same round again.",
			Suggestion: "Break the cycle: use the results you already have, change your approach, or give your answer.",
		}
	}
	return nil
}

// checkWriteRespelled refuses write s when the agent's last
// WriteCycleRepeats calls were s's write in other spellings (its
// arguments respelled as foldArgs does: a list in another order, a value
// in another case, a command's options), each answered as the one before
// it: the one write made again, which changed nothing, as a write made
// again word for word is a period-1 cycle.
//
// A click on a page's element, told apart from the others by its ref
// alone (s.unref), is answered with the page right after it, before what
// it started shows (a request, a debounced stepper's total): the page of
// the next call is the first to show it. Clicks answered alike are the
// one write made again after one more of them than other writes, so that
// WriteCycleRepeats clicks have each been seen.
func (d *Detector) checkWriteRespelled(a *agentState, s *Step, w []*entry) *Verdict {
	reps := d.cfg.writeCycleRepeats
	if s.unref && reps > 0 {
		reps++
	}
	if s.fold == 0 || reps == 0 || len(w) < reps {
		return nil
	}
	if sampled(w, func(e *entry) bool { return e.write && sameWrite(e, s) }) {
		if reps = min(2*reps, cap(a.ring)); len(w) < reps {
			return nil
		}
	}
	moved := false
	for i, e := range w[:reps] {
		if !sameWrite(e, s) || !e.done || e.transient {
			return nil
		}
		if i > 0 && e.res != w[0].res {
			// Answered alike but for what the write itself stamps (an
			// update time, a fresh request id, the next version), as
			// a write made again word for word may be (cycles).
			if e.tmpl == 0 || e.tmpl != w[0].tmpl {
				return nil
			}
			moved = true
		}
	}
	if moved && !countsStep(w, 1, reps) {
		return nil
	}
	if d.setOtherwise(a, s) {
		return nil
	}
	returned := "each returned what the one before it had"
	if moved {
		returned += " but for a stamp, an id or a count the write itself moved"
	}
	return &Verdict{
		Detector: "short_cycle",
		Message: upper(a.who()) + " made the same " + s.Tool + " call " + plural(reps, "time", "times") +
			" in a row in other spellings, and " + returned + "; " + s.Tool + " " +
			preview(s.Args) + " would make it again.",
		Suggestion: "The write changed nothing: check what it did (read the state it writes), change your approach, or give your answer.",
	}
}

// cycles reports whether the newest p*reps entries of w (newest first) are one
// period-p cycle of completed calls going round reps times, each call with the
// same key and result as the call p before it. With counted (a cycle that
// writes), a call's results may differ round after round in their numbers
// alone, so long as they share a template and their counts move by the
// same step each round (countedAnswer): a row appended again one row
// down, a job re-run under the next attempt, a stamp or an id the write
// made.
func cycles(w []*entry, p, reps int, counted bool) (ok, moved bool) {
	for i := 0; i < p*reps; i++ {
		e := w[i]
		if !e.done || e.transient {
			return false, false
		}
		if i+p < p*reps {
			f := w[i+p]
			if f.key != e.key && (p == 1 || !respelledWrite(e, f)) {
				return false, false
			}
			if f.res != e.res {
				if !counted || e.tmpl == 0 || e.tmpl != f.tmpl {
					return false, false
				}
				moved = true
			}
		}
	}
	if moved && !countsStep(w, p, reps) {
		return false, false
	}
	// A cycle whose calls are all one call is a period-1 cycle; report it once,
	// at p == 1.
	if p > 1 {
		same := true
		for _, e := range w[1:p] {
			same = same && e.key == w[0].key
		}
		if same {
			return false, false
		}
	}
	return true, moved
}

// respelledWrite reports whether entries e and f are one write made again
// in other spellings (Step.fold): its values in another case or order, or
// the element it acts on, described in words, under the ref the page
// numbered anew (a login typed and clicked again, round after round, each
// snapshot renumbering the form). A read's arguments stay its own: a read
// respelled is "rephrase"'s to judge.
func respelledWrite(e, f *entry) bool {
	return e.write && f.write && e.fold != 0 && e.fold == f.fold
}

// countsStep reports whether, at each place of a period-p cycle going
// round reps times in w (newest first), the answers' counts grew by one
// step each round, or not at all: a count that grows by as much each
// time is a sequence (the next row, the next attempt), one that moves
// otherwise or shrinks is state (a simulation's positions, failures
// fixed one by one).
func countsStep(w []*entry, p, reps int) bool {
	for k := 0; k < p; k++ {
		for r := 0; r+2 < reps; r++ {
			a, b, c := w[k+r*p], w[k+(r+1)*p], w[k+(r+2)*p]
			if !steps(&a.counts, &b.counts, &c.counts) {
				return false
			}
		}
	}
	return true
}

// cycleNames names the tools of one round, oldest first.
func cycleNames(round []*entry) string {
	var b strings.Builder
	for i := len(round) - 1; i >= 0; i-- {
		b.WriteString(round[i].tool)
		if i > 0 {
			b.WriteString(" -> ")
		}
	}
	return b.String()
}
