package loops

import "bytes"

// An answer that differs from the last only in what the call itself sent
// is not new. A read asked again with only its counters moved (a thought
// numbered anew, its text the same) or with only an address's query or
// trailing slash changed (one page under tracking parameters), whose
// answer is the last one but for the values it echoes of its arguments
// (the counters, the address), is the same call made again.

const (
	maxEchoArgs = 8 // argument values looked for in an answer
)

// echoStreak is a tool's answers in a row, each the last but for its
// echoes, to calls of one shape.
type echoStreak struct {
	shape uint64 // echoShape of the calls
	ans   uint64 // the answer with its echoes masked
	count int
	agent uint64
	epoch uint64
	last  string
}

// moving is what a call of one shape may move: its numbers (those
// echoShape leaves out) and its web addresses, as written.
type moving struct {
	nums [maxEchoArgs]uint64
	urls [maxEchoArgs][]byte
	nn   int
	nu   int
}

// echoShape hashes arguments with what a call may move without asking
// another thing left out (and kept in m, when m is not nil): numbers, but
// those under a key that names an identifier or a position (id, page,
// offset: another thing, another place), and a web address's query and
// trailing slash. ok says whether the call keeps something it asks about
// while those move: a free text (a thought, a question) or a web address.
// A call of numbers alone (seat 1, seat 2) is a batch, and has no shape.
func (d *Detector) echoShape(args []byte, m *moving) (shape uint64, ok bool) {
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return 0, false
	}
	return echoShapeOf(as.out, m)
}

// echoShapeOf is echoShape of the scanned arguments as.
func echoShapeOf(as []leaf, m *moving) (shape uint64, ok bool) {
	for i := range as {
		l := &as[i]
		switch {
		case l.kind == leafNumber && !l.id:
			shape += mix(l.path, 0x6e756d)
			if m != nil && m.nn < len(m.nums) {
				m.nums[m.nn] = l.val
				m.nn++
			}
		case l.kind == leafString && isWebAddress(l.raw):
			shape += mix(l.path, hashBytes(pageOf(l.raw)))
			ok = true
			if m != nil && m.nu < len(m.urls) {
				m.urls[m.nu] = l.raw
				m.nu++
			}
		default:
			if l.kind == leafString && bytes.IndexByte(l.raw, ' ') >= 0 {
				ok = true
			}
			shape += l.unit()
		}
	}
	return shape | 1, ok
}

func isWebAddress(v []byte) bool {
	return len(v) > 8 && (bytes.HasPrefix(v, []byte("https://")) || bytes.HasPrefix(v, []byte("http://")))
}

// pageOf is web address v without its scheme, fragment, query and trailing
// slash: the page it names.
func pageOf(v []byte) []byte {
	v = webAddress(v)
	if i := bytes.IndexByte(v, '?'); i >= 0 {
		v = v[:i]
	}
	return bytes.TrimRight(v, "/")
}

// echoAnswer hashes the pieces of an answer with what they echo of what
// the call moved (m) left out: a number equal to one of its numbers, one
// of its web addresses inside a line. What the call did not move is the
// same in every call of its shape, echoed or not. It returns 0 when the
// answer holds nothing.
func echoAnswer(m *moving, ans []leaf) uint64 {
	if len(ans) == 0 {
		return 0
	}
	var h uint64
	for i := range ans {
		l := &ans[i]
		v := l.val
		switch l.kind {
		case leafNumber:
			for _, x := range m.nums[:m.nn] {
				if x == v {
					v = 0x6563686f
					break
				}
			}
		case leafString:
			for _, u := range m.urls[:m.nu] {
				if j := bytes.Index(l.raw, u); j >= 0 {
					v = mix(hashBytes(l.raw[:j]), hashBytes(l.raw[j+len(u):]))
					break
				}
			}
		}
		h += mix(l.path, v)
	}
	return h | 1
}

// doneEcho counts read s's answer (sc) in the tool's streak of answers
// that differ only in their echoes. ec is the arguments' echoes when
// they were scanned for them (computed says so).
func (d *Detector) doneEcho(a *agentState, t *toolState, s *Step, o *Outcome, sc *scan, ec *echoes, computed bool) {
	e := &t.echo
	if o.Error || isWrite(s.Access) || sc.cut || len(s.Args) > maxChainArgs {
		e.count = 0
		return
	}
	if !computed {
		if !bytes.Contains(s.Args, []byte("://")) {
			// Neither a free text nor an address (echoShape's ok): not
			// scanned again.
			e.count = 0
			return
		}
		x := d.echoes(s.Args)
		ec = &x
	}
	if !ec.shaped {
		e.count = 0
		return
	}
	shape := ec.shape
	ans := echoAnswer(&ec.mv, sc.out)
	if ans == 0 {
		e.count = 0
		return
	}
	if e.count > 0 && e.shape == shape && e.ans == ans && e.agent == a.id && e.epoch == d.epoch {
		e.count++
	} else {
		*e = echoStreak{shape: shape, ans: ans, count: 1, agent: a.id, epoch: d.epoch}
	}
	if e.count >= d.cfg.rephraseMax {
		e.last = preview(o.Result) // quoted by a refusal: made only when one may come
	}
}

// checkEcho refuses read s when the tool's last answers, more than
// RephraseMax of them, were each the one before but for their echoes,
// and s is a call of their shape again.
func (d *Detector) checkEcho(a *agentState, t *toolState, s *Step) *Verdict {
	e := &t.echo
	max := d.cfg.rephraseMax
	if max == 0 || e.count <= max || isWrite(s.Access) || e.agent != a.id || e.epoch != d.epoch {
		return nil
	}
	if shape, ok := d.echoShape(s.Args, nil); !ok || shape != e.shape {
		return nil
	}
	return &Verdict{
		Detector: "repeat",
		Message: s.Tool + " answered the last " + plural(e.count, "call", "calls") + " alike (" + e.last +
			"), but for what each echoed of its own arguments (counters, an address's query), and nothing was written since; " +
			s.Tool + " " + preview(s.Args) + " moves only those again and cannot return anything new.",
		Suggestion: "Changing a counter or an address's tracking parameters does not ask anything new: use the answer " +
			"you have, ask for something else, or tell the user what you found.",
	}
}
