package loops

// Two agents that undo each other's write: one sets a thing one way (a
// conversation assigned to billing), the other sets it back (assigned to
// tier 1), each with a note in other words, each answered as the round
// before, and nothing read or written else in between. Each agent's own
// calls are one write made again in other words, which a cycle of one
// agent's calls does not see; the request's writes, in the order they were
// answered, go round a cycle of two. As a cycle of one agent's writes does
// (WriteCycleRepeats), after three rounds the write that starts a fourth
// is refused ("short_cycle"). One agent alone flipping a thing (a light
// flashed three times) is asked to; a read or another write in between (a
// charge looked up, a reply sent) starts over.

const flipRounds = 3 // rounds of two writes before the next is refused

// flipRing is the request's last successful writes in a row, oldest
// first: each write's tool, target (flipTarget), answer and agent.
type flipRing struct {
	n     int
	tgt   [2 * flipRounds]uint64
	ans   [2 * flipRounds]uint64
	agent [2 * flipRounds]uint64
	tool  [2 * flipRounds]uint64
	names [2 * flipRounds]string // each write's agent, named in a Message
}

// push records a successful write.
func (f *flipRing) push(tool, tgt, ans, agent uint64, name string) {
	if f.n == len(f.tgt) {
		copy(f.tgt[:], f.tgt[1:])
		copy(f.ans[:], f.ans[1:])
		copy(f.agent[:], f.agent[1:])
		copy(f.tool[:], f.tool[1:])
		copy(f.names[:], f.names[1:])
		f.n--
	}
	f.tgt[f.n], f.ans[f.n], f.agent[f.n], f.tool[f.n], f.names[f.n] = tgt, ans, agent, tool, name
	f.n++
}

// pair names two agents of a full ring that flips: the last write's, and
// the last other one's before it (the last two writes may be one agent's).
func (f *flipRing) pair() (string, string) {
	last := f.n - 1
	for i := last - 1; i >= 0; i-- {
		if f.agent[i] != f.agent[last] {
			return f.names[i], f.names[last]
		}
	}
	return f.names[last], f.names[last]
}

// flipping reports whether the ring is full and goes round a cycle of two
// writes of one tool to two targets, answered two ways (the thing set one
// way, then the other), each answered as two writes before, made by two
// agents or more. Two agents posting to two channels, each answered
// {"ok": true}, set nothing back and forth.
func (f *flipRing) flipping() bool {
	if f.n < len(f.tgt) || f.tgt[0] == 0 || f.tgt[1] == 0 || f.tgt[0] == f.tgt[1] || f.ans[0] == f.ans[1] || f.tool[0] != f.tool[1] {
		return false
	}
	two := false
	for i := 2; i < f.n; i++ {
		if f.tgt[i] != f.tgt[i-2] || f.ans[i] != f.ans[i-2] || f.tool[i] != f.tool[0] {
			return false
		}
	}
	for i := 1; i < f.n; i++ {
		two = two || f.agent[i] != f.agent[0]
	}
	return two
}

// checkFlip refuses write s when it starts another round of two agents'
// writes undoing each other (above).
func (d *Detector) checkFlip(s *Step) *Verdict {
	f := &d.flips
	if !isWrite(s.Access) || !f.flipping() {
		return nil
	}
	if d.flipTarget(s) != f.tgt[len(f.tgt)-2] {
		return nil
	}
	one, other := f.pair()
	return &Verdict{
		Detector: "short_cycle",
		Message: one + " and " + other + " have set one thing back and forth with " + s.Tool + " " +
			plural(flipRounds, "time", "times") + ", each undoing the other's write, each write answered as the round before, " +
			"and nothing else was read or written in between; " + s.Tool + " " + preview(s.Args) + " would start the round again.",
		Suggestion: "Stop handing the thing back and forth: decide who owns it from what each side found, " +
			"or ask the user which way it should be.",
	}
}

// flipTarget is what write s sets: its tool and its arguments respelled,
// free text left out (a note, a comment in other words sets the same).
func (d *Detector) flipTarget(s *Step) uint64 {
	as := scanLeaves(s.Args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return 0
	}
	t := hashString(s.Tool)
	for i := range as.out {
		l := &as.out[i]
		if l.kind == leafString && proseArg(l.key, l.raw) {
			continue
		}
		t += mix(l.path, respelled(l.raw, l.val))
	}
	return t | 1
}

// setOtherwise reports whether the request's last successful write was
// another agent's write of s's tool to another target, answered otherwise
// than the agent's own last write, and the first write since a read or a
// failure: the thing s sets was just set otherwise by an agent that
// looked first, and s sets it back. Made again after that, s is not one
// write that changed nothing (a flag switched on for each window of an
// experiment, switched off by the agent that read the window). Two writes
// answered alike ({"status": 200}) say nothing of what was set; two agents
// setting one thing back and forth with nothing else in between are
// checkFlip's, and writes in a row stay the agent's cycle.
func (d *Detector) setOtherwise(a *agentState, s *Step) bool {
	f := &d.flips
	return f.n == 1 && f.agent[0] != a.id && f.tool[0] == hashString(s.Tool) && f.ans[0] != a.writeAns && f.tgt[0] != d.flipTarget(s)
}
