package loops

// One name in other punctuation. A value written without spaces is the
// words it names, in their order: a storage prefix with or without its
// slashes around it (exports/2026/12/05/, /exports/2026/12/05,
// ./exports/2026/12/05/), a date with other separators
// (exports/2026-12-05/), a design tool's node id in its API and its URL
// notation (12:41, 12-41, 12%3A41). Asked again in another of them and
// answered alike, it is the same question going round (rephrase,
// no_progress; TestNotationRespelled). Other words, or the same words in
// another order, are another name (ENG-1841 and ENG-1842, a/b and b/a),
// a value of one word stays as it is, and the punctuation between two
// words of which one has a letter is part of the name: web-1 and web.1,
// com.acme and com/acme are other names (TestNotationJoins).

// notation writes value v (without spaces, its JSON escapes as written)
// to f as its words, lower-cased, in order, and the punctuation between
// two of them unless both are numbers, when it holds two words or more
// joined by punctuation, and reports whether it did. A percent escape of
// punctuation (%3A, %2F) is that punctuation.
func (f *folder) notation(v []byte) bool {
	if len(v) == 10 && isoDate(v) {
		return false // a day, written as a day's midnight is (instant)
	}
	words, inWord := 0, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case notationLetter(c):
			if !inWord {
				words++
				inWord = true
			}
		case c == '%' && i+2 < len(v) && escapedPunct(v[i+1], v[i+2]):
			inWord = false
			i += 2
		default:
			inWord = false
		}
	}
	if words < 2 {
		return false
	}
	// The words, lower-cased; between two of them the punctuation that
	// joins them, as written (a percent escape decoded), unless both are
	// numbers: the parts of a date, a time or an id of numbers (12:41,
	// 12-41) are joined alike by any punctuation, while web-1 and web.1,
	// com.acme and com/acme, are other names.
	prevEnd, prevDigits := -1, false
	for i := 0; i < len(v); {
		c := v[i]
		if c == '%' && i+2 < len(v) && escapedPunct(v[i+1], v[i+2]) {
			i += 3
			continue
		}
		if !notationLetter(c) {
			i++
			continue
		}
		j, digits := i, true
		for j < len(v) && notationLetter(v[j]) {
			digits = digits && isDigit(v[j])
			j++
		}
		if prevEnd >= 0 {
			if prevDigits && digits {
				f.byte(0x1f)
			} else {
				f.byte(0x1e)
				for k := prevEnd; k < i; k++ {
					if v[k] == '%' && k+2 < len(v) && escapedPunct(v[k+1], v[k+2]) {
						f.byte(hexByte(v[k+1])<<4 | hexByte(v[k+2]))
						k += 2
						continue
					}
					f.byte(v[k])
				}
			}
		}
		for ; i < j; i++ {
			c := v[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			f.byte(c)
		}
		prevEnd, prevDigits = j, digits
	}
	return true
}

// notationLetter reports whether c is part of a word of a name: a letter,
// a digit, or a byte of a character beyond ASCII.
func notationLetter(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c >= 0x80
}

// escapedPunct reports whether hex digits a and b, after a percent sign,
// encode ASCII punctuation or a space (%3A is ':', %2F is '/'; %41 is
// 'A', a letter, and not).
func escapedPunct(a, b byte) bool {
	if !isHex(a) || !isHex(b) {
		return false
	}
	c := hexByte(a)<<4 | hexByte(b)
	return c >= 0x20 && c < 0x7f && !notationLetter(c)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// hexByte is hex digit c's value.
func hexByte(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10
	}
	return 0
}

// An answer that names again a value the call was given (a storage
// listing's "Prefix", a node's "id") says what the agent said, in the
// agent's notation or the server's: such a piece is read as the value's
// words (notationFold), so that one name asked again in another notation,
// and echoed, is answered alike. Only a small answer's pieces are looked
// at (echoSmall pieces or fewer), and only values without spaces of two
// words or more (an id, a path, a prefix); a batch over new values names a
// new value each time, and learns it.
const (
	echoSmall = 16 // pieces of an answer whose echoes are looked for
	echoVals  = 8  // argument values looked at
)

// argEchoes are the words of the values of a call that its answer may
// echo, read from its arguments only when a piece of the answer may be
// one (a string of two words or more, or a new piece while the agent has
// a streak of rewordings to judge): a poll's answer of one-word strings
// and numbers costs nothing more.
type argEchoes struct {
	d     *Detector
	args  []byte
	small bool // the answer is small enough to look at
	read  bool // the arguments were read
	folds [echoVals]uint64
	n     int
	raws  [echoVals][]byte // the call's string values, word for word
	nraw  int
}

// argEchoesOf returns the values of args an answer of out's pieces may
// echo: none when the answer is larger than echoSmall pieces.
func (d *Detector) argEchoesOf(args []byte, out []leaf) argEchoes {
	return argEchoes{d: d, args: args, small: len(out) <= echoSmall && len(args) <= maxChainArgs}
}

// load reads e's arguments, once.
func (e *argEchoes) load() {
	if e.read {
		return
	}
	e.read = true
	d := e.d
	as := scanLeaves(e.args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	for i := range as.out {
		l := &as.out[i]
		if l.kind != leafString {
			continue
		}
		if e.nraw < echoVals {
			e.raws[e.nraw] = l.raw
			e.nraw++
		}
		if codeOfWords(l.raw) || e.n == echoVals {
			continue
		}
		if f, ok := notationFold(l.raw); ok {
			e.folds[e.n] = f
			e.n++
		}
	}
}

// unit returns piece l's identity, its value read as its words when it
// names one of e's values.
func (e *argEchoes) unit(l *leaf) uint64 {
	if e.small && l.kind == leafString && !codeOfWords(l.raw) && namesInWords(l.raw) {
		e.load()
		if f, ok := notationFold(l.raw); ok {
			for _, g := range e.folds[:e.n] {
				if f == g {
					return mix(l.path, f)
				}
			}
		}
	}
	return l.unit()
}

// notationFold hashes v, when it holds two words or more joined by
// punctuation, as its words in order, lower-cased (folder.notation).
func notationFold(v []byte) (uint64, bool) {
	var f folder
	f.q = 0x6e6f74
	if !f.notation(v) {
		return 0, false
	}
	return f.sum(), true
}

// own reports whether piece l of an answer is one of the call's string
// values word for word: it names what the agent asked about, and teaches
// it nothing of its own (an SMS's id, read back with its status).
func (e *argEchoes) own(l *leaf) bool {
	if !e.small || l.kind != leafString || e.d.rewrite == nil || e.d.rewrite.n < 2 {
		return false // no streak whose learning it could end
	}
	e.load()
	for _, v := range e.raws[:e.nraw] {
		if string(v) == string(l.raw) {
			return true
		}
	}
	return false
}

// namesInWords reports whether v holds two words or more joined by
// punctuation, as notation reads them.
func namesInWords(v []byte) bool {
	words, in := 0, false
	for i := 0; i < len(v); i++ {
		if notationLetter(v[i]) {
			if !in {
				if words++; words == 2 {
					return true
				}
			}
			in = true
		} else {
			in = false
		}
	}
	return false
}
