package loops

import "bytes"

// Respelled, answered alike: the arguments change, the answer teaches
// nothing new. A read written again in other words, each spelling
// answered as the one before it (the same empty list, the same rows, the
// same failing test), asks one question however it is spelled: `npm
// test`, `npm run test`, `npx jest`, then `npx jest --ci`; `ls -la
// src/lib`, `ls -la /home/dev/shop/src/lib`, then `ls src/lib -la`; a
// stay asked for 2 guests, 3 at a flexible rate, 2 again, then 3. Such a
// call's words are one earlier spelling's, but for words every spelling
// used, while a batch names a new thing each time (the same file of
// several sites, /srv/shop/..., /srv/blog/..., answering alike; files
// that are all empty), and a grid (row 2 seat 3 after row 1 seat 3 and
// row 2 seat 1) pairs words no one spelling paired: those go on.

const (
	alikeCalls    = 8  // spellings a streak remembers
	alikeWords    = 48 // distinct words a streak remembers
	alikeCallWord = 24 // words of one call looked at
)

// alikeStreak is a tool's answers in a row, alike, to an agent's calls in
// other spellings, with no write between them.
type alikeStreak struct {
	ans    uint64 // the answer's substance (scan digest)
	echoed uint64 // the answer with its echoes masked (echoDigest), 0 for none
	agent  uint64
	epoch  uint64
	n      int                // spellings in the streak
	asked  int                // answers in the streak, a spelling asked again counted again
	keys   [alikeCalls]uint64 // each spelling's callKey
	words  [alikeWords]uint64 // the words the spellings used
	calls  [alikeWords]uint8  // for each word, the spellings that used it (bit i: the i-th)
	nw     int                // words in use
	last   string             // the answer, quoted by a refusal
	ws     [alikeCallWord]uint64
	code   []byte // scratch for code cut by defaultSchema
	// The spellings' string values (their argument's path, the value,
	// and the value folded), and, once the answer named one of them to a
	// spelling that respelled it there, that argument's path (named): the
	// answer says which thing those spellings resolved to.
	vals  [alikeNamedVals][3]uint64
	nv    int
	named uint64
}

const alikeNamedVals = 16 // string values of the spellings a streak remembers

// alikeWordsOf appends to dst the distinct words of read arguments
// args: a string of code of several words gives its words, as wordsFold
// reads them (options, table aliases, a command's plumbing and words of
// punctuation alone left out), a glob or a regular expression its words,
// a path one word; any other value is one word, respelled as a question's
// is and bound to its key. It reports false for arguments of more than
// alikeCallWord words, or too many values to read: those are not judged.
func (d *Detector) alikeWordsOf(args []byte, dst []uint64, code *[]byte, skip uint64) ([]uint64, bool) {
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return dst, false
	}
	for i := range as.out {
		l := &as.out[i]
		if skip != 0 && l.path == skip {
			continue // the argument the answer resolved (alikeNamed)
		}
		start := len(dst)
		// A value is read without the white space around it ("TS-BLK-M "
		// names what "TS-BLK-M" names), as respelled reads it: a space at
		// its end makes no code of words of it.
		raw := l.raw
		if l.kind == leafString {
			raw = bytes.TrimSpace(raw)
		}
		switch {
		case l.kind == leafString && instructionKey(l.key) && proseArg(l.key, raw):
			// How to answer, in words ("Make it more formal.", "Formal
			// tone."): reworded, it asks the same of the same input.
		case l.kind == leafString && commaList(raw):
			// A list written in one string (tags, fields, ids): its
			// items, in any order, each bound to its key.
			for rest := raw; len(rest) > 0; {
				item := rest
				if i := bytes.IndexByte(rest, ','); i >= 0 {
					item, rest = rest[:i], rest[i+1:]
				} else {
					rest = nil
				}
				var f folder
				f.str(bytes.TrimSpace(item))
				dst = append(dst, mix(f.sum(), l.path)|alikeValue)
			}
		case l.kind == leafString && proseArg(l.key, raw):
			// Free text, one word whole: reworded, another word (a
			// search reworded is rephrase's to judge).
			dst = append(dst, mix(mix(hashBytes(raw), 0x70726f7365), l.path)|alikeValue)
		case l.kind == leafString && codeOfWords(raw):
			v := defaultSchema(raw, *code)
			if len(v) > 0 && &v[0] != &raw[0] {
				*code = v[:0] // kept for the next cut
			}
			wordsFoldInto(v, &dst)
			codeWords(dst[start:])
		case l.kind == leafString && pattern(raw):
			patternFoldInto(raw, &dst)
			codeWords(dst[start:])
		case l.kind == leafString && addressID(raw) != 0:
			// One resource by its id, whatever the address (urlid.go).
			dst = append(dst, mix(addressID(raw), l.path)|alikeValue)
		case l.kind == leafString && filePathOf(raw).n > 0:
			var f folder
			f.str(raw)
			dst = append(dst, f.sum()|alikeValue)
		case l.kind == leafString:
			// A value, bound to its key: row 1 seat 3 and row 3
			// seat 1 are two places.
			var f folder
			f.str(raw)
			dst = append(dst, mix(f.sum(), l.path)|alikeValue)
		default:
			dst = append(dst, mix(mix(l.val, uint64(l.kind)), l.path)|alikeValue)
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
	return dst, true
}

// alikeState is a tool's last read, and its streak once a second
// spelling was answered alike: a request that never respells a call
// allocates nothing for it.
type alikeState struct {
	ans, key, agent, epoch uint64 // the tool's last read: its answer, callKey, agent, epoch
	echoed                 uint64 // its answer with its echoes masked (echoDigest), 0 for none
	on                     bool
	st                     *alikeStreak
}

// doneAlike counts read s's answer (sc) in the tool's streak of answers
// alike to calls in other spellings.
func (d *Detector) doneAlike(a *agentState, t *toolState, s *Step, o *Outcome, sc *scan) {
	as := &t.alike
	st := as.st
	if o.Error || isWrite(s.Access) || sc.cut || len(s.Args) > maxChainArgs || s.epoch != d.epoch {
		as.on = false
		if st != nil {
			st.n = 0
		}
		return
	}
	ed := d.echoDigest(s.Args, sc.out)
	alike := as.on && (as.ans == sc.digest || ed != 0 && as.echoed == ed) && as.agent == a.id && as.epoch == d.epoch
	first, firstArgs := as.key, t.prevArgs
	as.on, as.ans, as.echoed, as.key, as.agent, as.epoch = true, sc.digest, ed, s.key, a.id, d.epoch
	if st != nil && st.n > 0 {
		if alike && (st.ans == sc.digest || ed != 0 && st.echoed == ed) {
			d.alikeAdd(st, s, o, sc.out)
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
	st.ans, st.echoed, st.agent, st.epoch, st.n, st.nw, st.last, st.asked = sc.digest, ed, a.id, d.epoch, 0, 0, "", 1
	st.nv, st.named = 0, 0
	if len(firstArgs) > 0 && readKey(s.Tool, isWrite(s.Access), firstArgs) == first {
		d.alikeNamed(st, firstArgs, sc.out)
		if ws, ok := d.alikeWordsOf(firstArgs, st.ws[:0], &st.code, 0); ok {
			st.addWords(ws, first)
		}
	}
	d.alikeAdd(st, s, o, sc.out)
}

// echoDigest hashes an answer's pieces (out) with those that are, word for
// word, a string value of the call's own arguments args read as the echo
// they are: a search's answer that names the query it ran, a directory's
// the filter, an audit's the address, as asked. Asked again in another
// spelling, such an answer differs from the last only in what it echoes;
// the rest is the same answer, and the spellings go round as answers
// alike do (TestEchoedSpellingAnswer). It returns 0 when no piece is an
// echo, or the answer or the arguments are too large to compare.
func (d *Detector) echoDigest(args []byte, out []leaf) uint64 {
	if len(out) == 0 || len(out) > echoDigestLeaves || bytes.IndexByte(args, '"') < 0 {
		return 0
	}
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return 0
	}
	var vals [echoVals][]byte
	n := 0
	for i := range as.out {
		if l := &as.out[i]; l.kind == leafString && len(bytes.TrimSpace(l.raw)) >= 3 && n < len(vals) {
			vals[n] = l.raw
			n++
		}
	}
	if n == 0 {
		return 0
	}
	var h uint64
	echoed := false
	for i := range out {
		l := &out[i]
		v := l.val
		if l.kind == leafString {
			for _, x := range vals[:n] {
				if bytes.Equal(l.raw, x) {
					v, echoed = 0x6563686f, true
					break
				}
			}
		}
		h += mix(l.path, v)
	}
	if !echoed {
		return 0
	}
	return h | 1
}

const echoDigestLeaves = 64 // pieces of an answer looked at for echoes

// alikeAdd adds read s, answered alike (out), to streak st.
func (d *Detector) alikeAdd(st *alikeStreak, s *Step, o *Outcome, out []leaf) {
	st.asked++
	if st.asked > d.cfg.rephraseMax && st.last == "" {
		st.last = resultPreview(o) // quoted by a refusal: made only when one may come
	}
	for _, k := range st.keys[:st.n] {
		if k == s.key {
			return // this spelling again: repeat's to judge, its words known
		}
	}
	if st.n == alikeCalls {
		return // the streak is long enough to judge; its words stay
	}
	d.alikeNamed(st, s.Args, out)
	ws, ok := d.alikeWordsOf(s.Args, st.ws[:0], &st.code, 0)
	if !ok {
		st.n = 0
		return
	}
	st.addWords(ws, s.key)
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
// spelling of their question: its words are those of one spelling
// before, but for words every spelling used.
func (d *Detector) checkAlike(a *agentState, t *toolState, s *Step) *Verdict {
	st := t.alike.st
	max := d.cfg.rephraseMax
	if st == nil || max == 0 || st.asked <= max || st.n < 2 || isWrite(s.Access) || st.agent != a.id || st.epoch != d.epoch || len(s.Args) > maxChainArgs {
		return nil
	}
	for _, k := range st.keys[:st.n] {
		if k == s.key {
			return nil
		}
	}
	ws, ok := d.alikeWordsOf(s.Args, st.ws[:0], &st.code, 0)
	if !ok || len(ws) == 0 {
		return nil
	}
	if !st.spelledBefore(ws) {
		// Words no one spelling used: another question, unless the
		// answer named the thing an earlier spelling wrote while
		// other spellings wrote another value there, and s differs
		// from one spelling only in that argument: it asks what the
		// answer already said those values are (TestAnswerNamesItsThing).
		if st.named == 0 || !d.argAt(s.Args, st.named) {
			return nil
		}
		if ws, ok = d.alikeWordsOf(s.Args, st.ws[:0], &st.code, st.named); !ok || !st.pairedBefore(ws) {
			return nil
		}
	}
	return &Verdict{
		Detector: "rephrase",
		Message: s.Tool + " answered the last " + plural(st.asked, "call", "calls") + " alike (" + st.last +
			"), each asking in other words what the others asked, and nothing was written since; " +
			s.Tool + " " + preview(s.Args) + " asks it once more in words already used.",
		Suggestion: "Spelling the query or command another way does not change its answer: use the answer you have, " +
			"ask for something else, or tell the user what you found.",
	}
}

// spelledBefore reports whether words ws are those of one spelling in st,
// but for words every spelling used, and not only those after spellings
// that each named their own thing (a batch).
func (st *alikeStreak) spelledBefore(ws []uint64) bool {
	all := uint8(1)<<st.n - 1 // the words every spelling used
	one := all                // the spellings that used every other word of s
	for _, w := range ws {
		i := 0
		for i < st.nw && st.words[i] != w {
			i++
		}
		if i == st.nw {
			return false // a word the streak never used: another question
		}
		if m := st.calls[i]; m != all {
			if one &= m; one == 0 {
				return false // words no one spelling paired
			}
		}
	}
	if one == all && st.batch() {
		// Only the words every spelling used, after spellings that each
		// named their own thing besides (env dev, staging, prod; status
		// late, lost, held): the filter left out asks about all of them.
		return false
	}
	return true
}

// pairedBefore reports whether words ws, the named argument left out, are
// all words of one spelling in st (or none): the spellings differed in
// the named argument, and the answer said what it names, so a batch's
// reading does not apply.
func (st *alikeStreak) pairedBefore(ws []uint64) bool {
	all := uint8(1)<<st.n - 1
	one := all
	for _, w := range ws {
		i := 0
		for i < st.nw && st.words[i] != w {
			i++
		}
		if i == st.nw {
			return false
		}
		if m := st.calls[i]; m != all {
			if one &= m; one == 0 {
				return false
			}
		}
	}
	return true
}

// alikeNamed records in st the string values of a spelling's arguments
// args, answered alike with out, after looking whether out names, word
// for word, a value an earlier spelling wrote under an argument where
// args writes it again in another case or punctuation: a station asked
// as KSFO, then ksfo, answered with "icaoId": "KSFO" each time. That
// argument is st.named. The value respelled is what tells the agent going
// round one thing from a batch of rows that resolve to one thing (company
// names mapped to one company): a batch names each row once.
func (d *Detector) alikeNamed(st *alikeStreak, args []byte, out []leaf) {
	if len(out) > echoDigestLeaves || bytes.IndexByte(args, '"') < 0 {
		return
	}
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return
	}
	for i := range as.out {
		l := &as.out[i]
		if l.kind != leafString || len(bytes.TrimSpace(l.raw)) < 3 {
			continue
		}
		h, fh := hashBytes(bytes.TrimSpace(l.raw)), foldedHash(l.raw)
		if st.named == 0 {
			for _, v := range st.vals[:st.nv] {
				if v[0] != l.path || v[1] == h || v[2] != fh {
					continue
				}
				for j := range out {
					if o := &out[j]; o.kind == leafString && hashBytes(bytes.TrimSpace(o.raw)) == v[1] {
						st.named = l.path
						break
					}
				}
				if st.named != 0 {
					break
				}
			}
		}
		if st.nv < len(st.vals) {
			st.vals[st.nv] = [3]uint64{l.path, h, fh}
			st.nv++
		}
	}
}

// foldedHash hashes v's letters and digits, ASCII lower-cased, and its
// other bytes above ASCII: KSFO, ksfo and K-SFO hash alike.
func foldedHash(v []byte) uint64 {
	var b [64]byte
	n := 0
	h := uint64(0x666f6c64)
	for _, c := range v {
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c >= 0x80:
		default:
			continue
		}
		if n == len(b) {
			h = mix(h, hashBytes(b[:n]))
			n = 0
		}
		b[n] = c
		n++
	}
	return mix(h, hashBytes(b[:n]))
}

// argAt reports whether arguments args hold a string at path p.
func (d *Detector) argAt(args []byte, p uint64) bool {
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	for i := range as.out {
		if as.out[i].path == p && as.out[i].kind == leafString {
			return true
		}
	}
	return false
}

// alikeValue marks a word that is an argument's value whole (a path, a
// free text, a value bound to its key), not a word of code or of a
// pattern.
const alikeValue = 1 << 63

// codeWords clears alikeValue in ws, words of code or of a pattern.
func codeWords(ws []uint64) {
	for i := range ws {
		ws[i] &^= alikeValue
	}
}

// batch reports whether st's spellings each named their own thing: each
// used a value of its own (env dev, staging, prod; a search for one
// person, then another), and every word not used by every spelling is
// such a value, used by one spelling alone. A call of only the words they
// all used then leaves the slot they filled out, and asks about all of
// them.
func (st *alikeStreak) batch() bool {
	all := uint8(1)<<st.n - 1
	var own uint8
	for i, m := range st.calls[:st.nw] {
		if m == all {
			continue
		}
		if m&(m-1) != 0 || st.words[i]&alikeValue == 0 {
			return false
		}
		own |= m
	}
	return own == all
}

// defaultSchema returns code v without "public." before a name (in any
// case, after a space or a bracket): PostgreSQL's default schema, so
// that public.orders names what orders names. It appends to buf[:0] when
// it must cut, and returns v as it is when it need not.
func defaultSchema(v, buf []byte) []byte {
	const p = "public."
	at := -1
	for i := 0; i+len(p) < len(v); i++ {
		if (i == 0 || wordEnd(v[i-1])) && bytes.EqualFold(v[i:i+len(p)], []byte(p)) && sqlName(v[i+len(p):i+len(p)+1], false) {
			at = i
			break
		}
	}
	if at < 0 || len(v) > maxChainArgs {
		return v
	}
	out := append(buf[:0], v[:at]...)
	for i := at; i < len(v); {
		if i+len(p) < len(v) && (i == 0 || wordEnd(v[i-1])) && bytes.EqualFold(v[i:i+len(p)], []byte(p)) && sqlName(v[i+len(p):i+len(p)+1], false) {
			i += len(p)
			continue
		}
		out = append(out, v[i])
		i++
	}
	return out
}

// instructionKey reports whether key k names how to answer rather than
// what to answer about (context, instructions, style, tone, guidance),
// in any case style.
func instructionKey(k []byte) bool {
	var low [16]byte
	n, ok := caseFold(k, low[:])
	if !ok {
		return false
	}
	switch string(low[:n]) {
	case "context", "instruction", "instructions", "style", "tone", "guidance", "styleguide":
		return true
	}
	return false
}

// commaList reports whether string v is a list of two items or more
// written with commas, each item one word (env:prod,service:checkout;
// id, name, email), not a sentence nor a number (1,234).
func commaList(v []byte) bool {
	if bytes.IndexByte(v, ',') < 0 || len(v) > 256 {
		return false
	}
	n := 0
	for rest := v; ; {
		item := rest
		i := bytes.IndexByte(rest, ',')
		if i >= 0 {
			item = rest[:i]
		}
		item = bytes.TrimSpace(item)
		if len(item) == 0 || bytes.IndexByte(item, ' ') >= 0 || numeric(item) {
			return false
		}
		n++
		if i < 0 {
			return n >= 2
		}
		rest = rest[i+1:]
	}
}
