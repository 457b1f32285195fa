package loops

import (
	"bytes"
	"math/bits"
)

// Respelled, answered alike: the arguments change, the answer teaches
// nothing new. A read whose code (a query, a command, a pattern, a path)
// is written again in other words, each spelling answered as the one
// before it (the same empty list, the same rows, the same failing test),
// asks one question however it is spelled: `npm test`, `npm run test`,
// `npx jest`, then `npx jest --ci`; `ls -la src/lib`, `ls -la
// /home/dev/shop/src/lib`, then `ls src/lib -la`. The words of such a
// call are all words the streak already used, while a batch names a new
// thing each time (the same file of several sites, /srv/shop/...,
// /srv/blog/..., answering alike; files that are all empty), and a
// product of two batches (table a, value 1; table b, value 2; table a,
// value 2) pairs words no one call paired: those are never judged here.

const (
	alikeCalls    = 8  // spellings a streak remembers
	alikeWords    = 48 // distinct words a streak remembers
	alikeCallWord = 24 // words of one call looked at
)

// alikeStreak is a tool's answers in a row, alike, to an agent's calls in
// other spellings, with no write between them.
type alikeStreak struct {
	ans   uint64 // the answer's substance (scan digest)
	agent uint64
	epoch uint64
	n     int                // spellings in the streak
	keys  [alikeCalls]uint64 // each spelling's callKey
	words [alikeWords]uint64 // the words the spellings used
	calls [alikeWords]uint8  // for each word, the spellings that used it (bit i: the i-th)
	nw    int                // words in use
	last  string             // the answer, quoted by a refusal
	ws    [alikeCallWord]uint64
}

// alikeWordsOf appends to dst the distinct words of read arguments args
// and reports whether they hold code to respell: a string of code of
// several words (its words, as wordsFold reads them: options, table
// aliases and a command's plumbing left out), a glob or a regular
// expression (its words), or a path (one word). Other values are one word
// each, respelled as a question's are; keys are not words. Arguments
// without code, or of more than alikeCallWord words, are not judged.
func (d *Detector) alikeWordsOf(args []byte, dst []uint64) ([]uint64, bool) {
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return dst, false
	}
	code := false
	for i := range as.out {
		l := &as.out[i]
		start := len(dst)
		switch {
		case l.kind == leafString && codeOfWords(l.raw):
			wordsFoldInto(l.raw, &dst)
			code = true
		case l.kind == leafString && pattern(l.raw):
			patternFoldInto(l.raw, &dst)
			code = true
		case l.kind == leafString:
			var f folder
			f.str(l.raw)
			dst = append(dst, f.sum())
			if filePathOf(l.raw).n > 0 {
				code = true
			}
		default:
			dst = append(dst, mix(l.val, uint64(l.kind)))
		}
		// Each word once.
		for j := start; j < len(dst); {
			if has(dst[:j], dst[j]) {
				dst[j] = dst[len(dst)-1]
				dst = dst[:len(dst)-1]
				continue
			}
			j++
		}
		if len(dst) > alikeCallWord {
			return dst, false
		}
	}
	return dst, code
}

// alikeState is a tool's last read, and its streak once a second
// spelling was answered alike: a request that never respells a call
// allocates nothing for it.
type alikeState struct {
	ans, key, agent, epoch uint64 // the tool's last read: its answer, callKey, agent, epoch
	on                     bool
	st                     *alikeStreak
}

// doneAlike counts read s's answer (sc) in the tool's streak of answers
// alike to calls in other spellings.
func (d *Detector) doneAlike(a *agentState, t *toolState, s *Step, o *Outcome, sc *scan) {
	as := &t.alike
	st := as.st
	if o.Error || isWrite(s.Access) || sc.cut || s.prose || len(s.Args) > maxChainArgs || s.epoch != d.epoch ||
		!bytes.ContainsAny(s.Args, " /*=\\'") {
		as.on = false
		if st != nil {
			st.n = 0
		}
		return
	}
	alike := as.on && as.ans == sc.digest && as.agent == a.id && as.epoch == d.epoch
	first, firstArgs := as.key, t.prevArgs
	as.on, as.ans, as.key, as.agent, as.epoch = true, sc.digest, s.key, a.id, d.epoch
	if st != nil && st.n > 0 {
		if alike && st.ans == sc.digest {
			d.alikeAdd(st, s, o)
			return
		}
		st.n = 0
	}
	if !alike || first == s.key {
		return
	}
	// A second spelling answered alike: the streak starts, with the first
	// one's words when its arguments are at hand (the tool's call before).
	if st == nil {
		st = &alikeStreak{}
		as.st = st
	}
	st.ans, st.agent, st.epoch, st.n, st.nw, st.last = sc.digest, a.id, d.epoch, 0, 0, ""
	if len(firstArgs) > 0 && callKey(s.Tool, firstArgs) == first {
		if ws, ok := d.alikeWordsOf(firstArgs, st.ws[:0]); ok {
			st.addWords(ws, first)
		}
	}
	d.alikeAdd(st, s, o)
}

// alikeAdd adds read s, answered alike, to streak st.
func (d *Detector) alikeAdd(st *alikeStreak, s *Step, o *Outcome) {
	for _, k := range st.keys[:st.n] {
		if k == s.key {
			return // this spelling again: repeat's to judge
		}
	}
	if st.n == alikeCalls {
		return // the streak is long enough to judge; its words stay
	}
	ws, ok := d.alikeWordsOf(s.Args, st.ws[:0])
	if !ok {
		st.n = 0
		return
	}
	st.addWords(ws, s.key)
	if st.n >= d.cfg.rephraseMax+1 && st.last == "" {
		st.last = resultPreview(o)
	}
}

// addWords adds a spelling, its callKey k and its words ws, to st.
func (st *alikeStreak) addWords(ws []uint64, k uint64) {
	bit := uint8(1) << st.n
	for _, w := range ws {
		i := 0
		for i < st.nw && st.words[i] != w {
			i++
		}
		if i == st.nw {
			if st.nw == alikeWords {
				st.n = 0 // too many words to judge
				return
			}
			st.words[i], st.calls[i] = w, 0
			st.nw++
		}
		st.calls[i] |= bit
	}
	st.keys[st.n] = k
	st.n++
}

// checkAlike refuses read s when the tool's last answers, to more than
// RephraseMax+1 spellings, were each the one before it, and s is one more
// spelling of their question: every word of it was used by the streak,
// and those only one spelling used all come from one spelling.
func (d *Detector) checkAlike(a *agentState, t *toolState, s *Step) *Verdict {
	st := t.alike.st
	max := d.cfg.rephraseMax
	if st == nil || max == 0 || st.n <= max || isWrite(s.Access) || s.prose || st.agent != a.id || st.epoch != d.epoch || len(s.Args) > maxChainArgs {
		return nil
	}
	for _, k := range st.keys[:st.n] {
		if k == s.key {
			return nil
		}
	}
	ws, ok := d.alikeWordsOf(s.Args, st.ws[:0])
	if !ok || len(ws) == 0 {
		return nil
	}
	one := uint8(0xff) // the spelling that used the words only one used
	for _, w := range ws {
		i := 0
		for i < st.nw && st.words[i] != w {
			i++
		}
		if i == st.nw {
			return nil // a word the streak never used: another question
		}
		if m := st.calls[i]; bits.OnesCount8(m) == 1 {
			if one &= m; one == 0 {
				return nil // words no one spelling paired
			}
		}
	}
	return &Verdict{
		Detector: "rephrase",
		Message: s.Tool + " answered the last " + plural(st.n, "call", "calls") + " alike (" + st.last +
			"), each asking in other words what the others asked, and nothing was written since; " +
			s.Tool + " " + preview(s.Args) + " asks it once more in words already used.",
		Suggestion: "Spelling the query or command another way does not change its answer: use the answer you have, " +
			"ask for something else, or tell the user what you found.",
	}
}
