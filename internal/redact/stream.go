package redact

import (
	"bytes"
	"sort"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Stream masks the registered values in a text that arrives in pieces,
// such as a streamed answer, where a secret may be split across two
// pieces: what it passes on, with what Flush returns, is what Values makes
// of the whole text. Not safe for concurrent use.
type Stream struct {
	r    *Redactor
	held []byte
}

// Stream returns a Stream over r's registered values.
func (r *Redactor) Stream() *Stream { return &Stream{r: r} }

// Next returns what of the text may be passed on once piece has arrived:
// the values it completes masked, and without the end of it that may
// begin a value (or a longer one that a shorter ends), which is held for
// the next piece (or Flush). A value that begins before that end is held
// whole.
func (s *Stream) Next(piece string) string {
	set := s.r.secrets.Load()
	text := append(s.held, piece...)
	s.held = nil
	if len(set.secs) == 0 {
		return string(text)
	}
	cut := heldIn(text, set)
	spells, open := set.escapesIn(text)
	if spells {
		cut = escapedCut(text, cut, set)
	} else if open < len(text) {
		// An escape cut short is held whole, and with it what before it
		// may begin a value it goes on spelling ("tok" before "%3"),
		// even where a form's start held less ("k%", another value's
		// "k%3Cey").
		cut = min(cut, heldIn(text[:open], set))
	}
	s.held = append([]byte(nil), text[cut:]...)
	eds := valueEdits(nil, text[:cut], set, false)
	if spells { // else none of text[:cut]'s escapes spells anything either
		eds = escapedEdits(eds, text[:cut], set, false)
	}
	if len(eds) == 0 {
		return string(text[:cut])
	}
	return string(apply(nil, text[:cut], merge(eds)))
}

// heldIn returns where a Stream cuts text (see held).
func heldIn(text []byte, set *secretSet) int {
	if set.idx != nil {
		return set.idx.held(text)
	}
	return held(text, set)
}

// held returns where a Stream cuts text: before the longest end of it that
// a value's form begins with (and is not whole), then before any form that
// the cut splits.
func held(text []byte, set *secretSet) int {
	cut := len(text)
	for _, sec := range set.secs { // the longest end of text that a value begins with
		for _, f := range sec.forms {
			for n := min(len(f)-1, len(text)); n > len(text)-cut; n-- {
				if bytes.HasSuffix(text, f[:n]) {
					cut = len(text) - n
					break
				}
			}
		}
	}
	for moved := true; moved; { // no value straddles the cut
		moved = false
		for _, sec := range set.secs {
			for _, f := range sec.forms {
				for i := max(0, cut-len(f)+1); i < cut; i++ {
					if bytes.HasPrefix(text[i:], f) && i+len(f) > cut {
						cut, moved = i, true
						break
					}
				}
			}
		}
	}
	return cut
}

// Flush returns the text held back at the end, masked as the end of the
// whole text is (a start of a value that gives away enough of it is
// masked).
func (s *Stream) Flush() string {
	h := s.held
	s.held = nil
	set := s.r.secrets.Load()
	eds := valueEdits(nil, h, set, true)
	eds = escapedEdits(eds, h, set, true)
	if len(eds) == 0 {
		return string(h)
	}
	return string(apply(nil, h, merge(eds)))
}

// Holding reports whether text is held back.
func (s *Stream) Holding() bool { return len(s.held) > 0 }

// A streamed text may spell a value with JSON escapes: a tool call's
// arguments are a JSON document, which Python's json.dumps writes with
// \u00f6 for ö, and a model may write \u0073k- as well as sk-. Values
// masks them in a whole text (read unescaped); a Stream reads its text
// unescaped too, as a view in which each byte knows where in the text
// its escape begins, and neither passes on a piece that ends in the middle
// of an escape nor cuts one.

// escapes maps the offsets of a text's view (unescaped) to the text: the
// escapes read, where each begins in both and how long it is in each; a
// byte between them is one byte in both. (A slice of every byte's offset
// cost a streamed text of Windows paths or LaTeX 8 bytes a byte, twice a
// piece: docs/BENCHMARKS.md.)
type escapes []escape

type escape struct{ v, t, vn, tn int }

// at returns the offset in the text of the escape or byte that the view's
// byte p comes from; at(len(view)) is where the view ends in the text.
func (m escapes) at(p int) int {
	k := sort.Search(len(m), func(i int) bool { return m[i].v > p }) - 1
	if k < 0 {
		return p
	}
	e := m[k]
	if p < e.v+e.vn {
		return e.t
	}
	return e.t + e.tn + p - e.v - e.vn
}

// unescaped returns text with its escapes read (spell.go: JSON's,
// percent-encoding, HTML's character references; an unknown one kept as
// it is), and where each byte of that view comes from in text (see
// escapes); the view ends before an escape that text ends in the middle
// of (a backslash, a \u with fewer than four digits, the first half of a
// surrogate pair, a % with fewer than two digits, a character reference
// without its semicolon), unless text is whole: then what it ends with is
// read as it is (a value that ends "&Value" is not cut from the view).
func unescaped(text []byte, whole bool) (view []byte, m escapes) {
	view = make([]byte, 0, len(text))
	sc := newEscapeScan(text)
	for i := 0; i < len(text); {
		j := sc.from(i)
		if j < 0 {
			return append(view, text[i:]...), m
		}
		view = append(view, text[i:j]...)
		i = j
		if !whole && unfinished(text[i:]) {
			return view, m
		}
		n := len(view)
		var next int
		var ok bool
		if view, next, ok = appendSpelled(view, text, i); !ok {
			view, next = append(view, text[i]), i+1 // one byte in both
		} else {
			m = append(m, escape{v: n, t: i, vn: len(view) - n, tn: next - i})
		}
		i = next
	}
	return view, m
}

// escapesIn reads the escapes of text: spells, whether one stands for a
// byte of a value's forms; open, where one that text ends in the middle of
// begins (len(text) if none). An escape that spells nothing a value holds
// (a Windows path's \b and \t, LaTeX's \\ when no value holds a
// backslash, a quote or a slash; a URL's %20 when none holds a space; an
// unknown escape) puts no value in the view that text itself does not
// show, and text is then not read unescaped: docs/BENCHMARKS.md.
func (set *secretSet) escapesIn(text []byte) (spells bool, open int) {
	var buf [2 * utf8.UTFMax]byte
	sc := newEscapeScan(text)
	for i := 0; i < len(text); {
		j := sc.from(i)
		if j < 0 {
			break
		}
		i = j
		if len(text)-i < 12 && unfinished(text[i:]) { // no escape is longer
			return false, i
		}
		out, next, ok := appendSpelled(buf[:0], text, i)
		if !ok { // an unknown escape: the byte is itself
			i++
			continue
		}
		for _, c := range out {
			if set.inForms[c] {
				return true, len(text)
			}
		}
		i = next
	}
	return false, len(text)
}

// unfinished reports whether esc, an escape's first byte and what follows
// it to the end of a text, is an escape cut short.
func unfinished(esc []byte) bool {
	if esc[0] != '\\' {
		return unfinishedRef(esc)
	}
	if len(esc) < 2 {
		return true
	}
	if esc[1] != 'u' {
		return false
	}
	hex := func(b []byte) bool {
		for _, c := range b {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
		return true
	}
	if len(esc) < 6 {
		return hex(esc[2:])
	}
	r, err := strconv.ParseUint(string(esc[2:6]), 16, 16)
	if err != nil || len(esc) >= 12 {
		return false
	}
	// The first half of a surrogate pair waits for its second.
	return utf16.IsSurrogate(rune(r)) && r < 0xdc00 && bytes.HasPrefix([]byte(`\u`), esc[6:min(len(esc), 8)]) && hex(esc[min(len(esc), 8):])
}

// escapedCut returns where a Stream cuts text, whose cut by the forms of
// the values is cut, so that the view holds back what it would hold back
// of the text unescaped, and no escape is cut.
func escapedCut(text []byte, cut int, set *secretSet) int {
	view, m := unescaped(text, false)
	for {
		v := sort.Search(len(view)+1, func(i int) bool { return m.at(i) > cut }) - 1
		c := m.at(heldIn(view[:v], set))
		if c < cut {
			c = heldIn(text[:c], set)
		}
		if c == cut {
			return cut
		}
		cut = c
	}
}

// escapedEdits appends the edits that mask the values that b spells with
// escapes: found in b's view, each masks the escapes it comes from. b ends
// in no escape cut short (a Stream holds one back): what looks like one at
// its end is read as it is.
func escapedEdits(eds []edit, b []byte, set *secretSet, end bool) []edit {
	if spells, _ := set.escapesIn(b); !spells {
		return eds
	}
	view, m := unescaped(b, true)
	for _, e := range valueEdits(nil, view, set, end) {
		eds = append(eds, edit{from: m.at(e.from), to: m.at(e.to)})
	}
	return eds
}
