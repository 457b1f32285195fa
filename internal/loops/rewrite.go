package loops

import (
	"bytes"
	"slices"
)

// One write said again in other words. An agent that files one bug again
// under reworded titles, sends one message again reworded, appends one
// to-do again in other words, or asks another agent one question again
// as a new task, makes a new thing each time (a new issue, a new SMS, a
// new task), and each answer says only that it was made: its words but
// its ids, numbers and what it echoes of the call are the same. Such a
// write's arguments are the last one's but for one text, and that text
// says again what the streak's texts said: it shares two words or more
// with them (cut to their first five letters), more than half of its own
// words, and names no number they did not (invoice 1002 after invoice
// 1001 is another invoice). When three such writes in a row were
// answered alike and nothing the agent read since the first brought it
// anything new (an SMS's status read after each, undelivered each time,
// naming only the message the agent asked about), the fourth is refused
// ("rephrase"; TestWriteReworded). A write of other words (a day's log
// entry by entry, a template sent to other people: another value beside
// the text), another write between, a read that brings news (a deploy's
// status moving between posts) or an answer that says something else
// starts over.

const (
	rewriteWords = 48 // words a streak remembers
	rewriteArgs  = 32 // argument values compared
)

// rewriteStreak is an agent's writes of one tool in a row, each the one
// before it reworded.
type rewriteStreak struct {
	agent, tool uint64
	epoch       uint64 // d.epoch after the streak's last write
	args        []byte // the streak's first write's arguments
	slot        uint64 // the path of the value reworded; 0 until the second write
	n           int    // writes in the streak
	tmpl        uint64 // their answers' words, ids and echoes aside
	learned     bool   // a read brought the agent something new since
	words       []uint64
	nums        []uint64
	prev        []uint64 // the last text's words, in order
	last        string   // an answer, quoted by a refusal
}

// rewordedSlot reports whether write arguments args are st's first
// write's but for one string value under slot (or, with slot 0, any one
// path), and returns that value and its path.
func (d *Detector) rewordedSlot(st *rewriteStreak, args []byte) ([]byte, []byte, uint64, bool) {
	if len(args) > maxChainArgs {
		return nil, nil, 0, false
	}
	as := scanLeaves(st.args, d.prev[:0], rewriteArgs, false)
	d.prev = as.out[:0]
	bs := scanLeaves(args, d.args[:0], rewriteArgs, false)
	d.args = bs.out[:0]
	if as.cut || bs.cut || len(as.out) != len(bs.out) {
		return nil, nil, 0, false
	}
	at := -1
	for i := range as.out {
		a, b := &as.out[i], &bs.out[i]
		if a.path != b.path || a.kind != b.kind {
			return nil, nil, 0, false
		}
		if a.val == b.val {
			continue
		}
		if at >= 0 || a.kind != leafString || st.slot != 0 && a.path != st.slot || !writtenText(a.key, a.raw) || !writtenText(b.key, b.raw) {
			return nil, nil, 0, false
		}
		at = i
	}
	if at < 0 {
		return nil, nil, 0, false
	}
	return as.out[at].raw, bs.out[at].raw, as.out[at].path, true
}

// rewords reports whether a text of words ws and numbers ns says again
// what st's texts said.
func (st *rewriteStreak) rewords(ws, ns []uint64) bool {
	n := shared(ws, st.words)
	if n < 2 || 2*n <= len(ws) {
		return false
	}
	for _, x := range ns {
		if _, found := slices.BinarySearch(st.nums, x); !found {
			return false
		}
	}
	return true
}

// series reports whether text, of words ws (in order), is the streak's
// last text with one run of its words put in place of another, each of
// them a word no text of the streak said: the next item of a list
// written from one template (a task of one project, an alert for another
// host, a changelog line for another feature), not the last said again.
// A rewording moves, drops or swaps the words it keeps.
func (st *rewriteStreak) series(text []byte) bool {
	var buf [rewriteWords]uint64
	ws := cutWordsSeq(text, buf[:0], linkPrefix)
	p, q := st.prev, ws
	for len(p) > 0 && len(q) > 0 && p[0] == q[0] {
		p, q = p[1:], q[1:]
	}
	for len(p) > 0 && len(q) > 0 && p[len(p)-1] == q[len(q)-1] {
		p, q = p[:len(p)-1], q[:len(q)-1]
	}
	if len(p) == 0 || len(q) == 0 || len(q) == len(ws) {
		return false
	}
	for _, w := range q {
		if _, found := slices.BinarySearch(st.words, w); found {
			return false
		}
	}
	return true
}

// checkRewrite refuses write s when it rewords the agent's last writes
// of its tool, three of them answered alike with nothing learned since.
func (d *Detector) checkRewrite(a *agentState, s *Step) *Verdict {
	st := d.rewrite
	max := d.cfg.rephraseMax
	if st == nil || max == 0 || !isWrite(s.Access) || st.n <= max || st.agent != a.id || st.tool != hashString(s.Tool) ||
		st.learned || st.epoch != d.epoch || !d.quiet(d.seq, d.epoch) {
		return nil
	}
	_, text, _, ok := d.rewordedSlot(st, s.Args)
	if !ok {
		return nil
	}
	ws := cutWords(text, d.words[:0], linkPrefix)
	d.words = ws[:0]
	if !st.rewords(ws, numbers(string(text), nil)) || st.series(text) {
		return nil
	}
	return &Verdict{
		Detector: "rephrase",
		Message: s.Tool + " was called " + plural(st.n, "time", "times") + " in a row with the same arguments but for one text, " +
			"each time saying again in other words what the last said, and each answered alike (" + st.last +
			"), with nothing new learned since; " + s.Tool + " " + preview(s.Args) + " would make the same thing once more.",
		Suggestion: "It was done already: rewording it makes another copy. Check what the earlier calls made, " +
			"or tell the user what blocks you instead of doing it again.",
	}
}

// doneRewrite counts write s, which succeeded with answer res, in the
// agent's streak of rewordings.
func (d *Detector) doneRewrite(a *agentState, s *Step, res []byte) {
	if d.cfg.rephraseMax == 0 || len(s.Args) > maxChainArgs {
		return
	}
	st := d.rewrite
	tool := hashString(s.Tool)
	tmpl := answerWords(res, s.Args)
	// What the agent learned after the first write (the outcome of its
	// first try, an SMS undelivered) is why it tries again; after the
	// second, anything new starts over.
	if st != nil && st.agent == a.id && st.tool == tool && (st.n == 1 || !st.learned) && st.epoch+1 == d.epoch && st.tmpl == tmpl {
		if first, text, slot, ok := d.rewordedSlot(st, s.Args); ok {
			ws := cutWords(text, d.words[:0], linkPrefix)
			d.words = ws[:0]
			ns := numbers(string(text), nil)
			if st.slot == 0 {
				// The second write: the first one's text starts the
				// streak's words.
				st.slot = slot
				st.words = append(st.words[:0], cutWords(first, nil, linkPrefix)...)
				st.nums = numbers(string(first), st.nums[:0])
				st.prev = cutWordsSeq(first, st.prev[:0], linkPrefix)
			}
			st.epoch = d.epoch
			series := st.series(text)
			st.prev = cutWordsSeq(text, st.prev[:0], linkPrefix)
			if series {
				// The next item of a list: not counted, and its words
				// are said.
				st.words = addWords(st.words, ws)
				return
			}
			if st.rewords(ws, ns) {
				st.n, st.learned = st.n+1, false
				st.words = addWords(st.words, ws)
				if st.n > d.cfg.rephraseMax && st.last == "" {
					st.last = preview(res)
				}
			}
			// Another text in the same place (a log's next entry) is
			// not counted, and does not end the streak.
			return
		}
	}
	if st == nil {
		st = &rewriteStreak{}
		d.rewrite = st
	}
	st.agent, st.tool, st.epoch, st.slot, st.n, st.tmpl, st.learned, st.last = a.id, tool, d.epoch, 0, 1, tmpl, false, ""
	st.args = append(st.args[:0], s.Args...)
	st.words, st.nums, st.prev = st.words[:0], st.nums[:0], st.prev[:0]
}

// addWords adds words ws to sorted set words, up to rewriteWords.
func addWords(words, ws []uint64) []uint64 {
	for _, w := range ws {
		if len(words) < rewriteWords {
			words = append(words, w)
		}
	}
	slices.Sort(words)
	return slices.Compact(words)
}

// learn records that a read of agent a brought it something new.
func (d *Detector) learn(a *agentState) {
	if st := d.rewrite; st != nil && st.agent == a.id {
		st.learned = true
	}
}

// answerWords hashes the words of a write's answer res (runs of letters
// and digits, lower-cased) but those holding a digit, a UUID's letters
// (a, b, c, d, e, f only, four, eight or twelve of them), function words
// ("to", which a reworded text may hold or not) and those its arguments
// args hold: what the answer says beside the ids, the numbers
// and the echo of what it was given. Only the first maxAnswerWords bytes
// of res are read: each word is looked for in args (up to maxChainArgs),
// and a 1 MB answer cost a second of CPU a write.
func answerWords(res, args []byte) uint64 {
	res = res[:min(len(res), maxAnswerWords)]
	var sum uint64
	word := func(w []byte) {
		digit, hex := false, true
		for _, c := range w {
			if isDigit(c) {
				digit = true
			}
			if c < 'a' || c > 'f' {
				hex = false
			}
		}
		if digit || hex && (len(w) == 4 || len(w) == 8 || len(w) == 12) || stop[string(w)] || inWords(args, w) {
			return
		}
		sum += mix(hashBytes(w), 0x727772)
	}
	var buf [64]byte
	w := buf[:0]
	for _, c := range res {
		switch {
		case notationLetter(c):
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if len(w) < cap(w) {
				w = append(w, c)
			}
		default:
			if len(w) > 0 {
				word(w)
			}
			w = w[:0]
		}
	}
	if len(w) > 0 {
		word(w)
	}
	return sum
}

// maxAnswerWords bounds what answerWords reads of an answer.
const maxAnswerWords = 8 << 10

// inWords reports whether lower-case word w is a word of b (in any case).
func inWords(b, w []byte) bool {
	for i := 0; i+len(w) <= len(b); {
		j := bytes.Index(b[i:], w)
		k := i + j
		if j < 0 {
			// In another case: compare folded.
			return inWordsFold(b, w)
		}
		if (k == 0 || !notationLetter(b[k-1])) && (k+len(w) == len(b) || !notationLetter(b[k+len(w)])) {
			return true
		}
		i = k + 1
	}
	return inWordsFold(b, w)
}

// inWordsFold is inWords, comparing case-folded.
func inWordsFold(b, w []byte) bool {
	for k := 0; k+len(w) <= len(b); k++ {
		if (k == 0 || !notationLetter(b[k-1])) && bytes.EqualFold(b[k:k+len(w)], w) && (k+len(w) == len(b) || !notationLetter(b[k+len(w)])) {
			return true
		}
	}
	return false
}

// writtenText reports whether value v under key is text written for
// people (a title, a message, a note; a list item's marker, "- [ ] " or
// "- ", aside), not code, a command or a name: proseArg's test, under any
// key that does not name code.
func writtenText(key, v []byte) bool {
	for _, m := range [...]string{"- [ ] ", "- [x] ", "* [ ] ", "- ", "* "} {
		if bytes.HasPrefix(v, []byte(m)) {
			v = v[len(m):]
			break
		}
	}
	return proseArg(key, v)
}
