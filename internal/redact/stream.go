package redact

import (
	"bytes"
	"sort"
	"strconv"
	"unicode/utf16"

	"github.com/agentreach/reach/internal/jsonscan"
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
	if bytes.IndexByte(text, '\\') >= 0 {
		cut = escapedCut(text, cut, set)
	}
	s.held = append([]byte(nil), text[cut:]...)
	eds := valueEdits(nil, text[:cut], set, false)
	eds = escapedEdits(eds, text[:cut], set, false)
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

// unescaped returns text with its JSON escapes read (an unknown one kept
// as it is), and at: for each byte of the view, the offset in text of the
// escape or byte it comes from, and at[len(view)], where the view ends in
// text: before an escape that text ends in the middle of (a backslash, a
// \u with fewer than four digits, the first half of a surrogate pair).
func unescaped(text []byte) (view []byte, at []int) {
	view = make([]byte, 0, len(text))
	at = make([]int, 0, len(text)+1)
	for i := 0; i < len(text); {
		if text[i] != '\\' {
			view = append(view, text[i])
			at = append(at, i)
			i++
			continue
		}
		if unfinished(text[i:]) {
			return view, append(at, i)
		}
		n := len(view)
		var next int
		var ok bool
		if view, next, ok = jsonscan.AppendUnescape(view, text, i); !ok {
			view, next = append(view, '\\'), i+1
		}
		for range len(view) - n {
			at = append(at, i)
		}
		i = next
	}
	return view, append(at, len(text))
}

// unfinished reports whether esc, a backslash and what follows it to the
// end of a text, is an escape cut short.
func unfinished(esc []byte) bool {
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
	view, at := unescaped(text)
	for {
		v := sort.Search(len(at), func(i int) bool { return at[i] > cut }) - 1
		c := at[heldIn(view[:v], set)]
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
// escapes: found in b's view, each masks the escapes it comes from.
func escapedEdits(eds []edit, b []byte, set *secretSet, end bool) []edit {
	if bytes.IndexByte(b, '\\') < 0 {
		return eds
	}
	view, at := unescaped(b)
	for _, e := range valueEdits(nil, view, set, end) {
		eds = append(eds, edit{from: at[e.from], to: at[e.to]})
	}
	return eds
}
