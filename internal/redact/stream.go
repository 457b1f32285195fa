package redact

import "bytes"

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
	var cut int
	if set.idx != nil {
		cut = set.idx.held(text)
	} else {
		cut = held(text, set)
	}
	s.held = append([]byte(nil), text[cut:]...)
	eds := valueEdits(nil, text[:cut], set, false)
	if len(eds) == 0 {
		return string(text[:cut])
	}
	return string(apply(nil, text[:cut], merge(eds)))
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
	eds := valueEdits(nil, h, s.r.secrets.Load(), true)
	if len(eds) == 0 {
		return string(h)
	}
	return string(apply(nil, h, merge(eds)))
}

// Holding reports whether text is held back.
func (s *Stream) Holding() bool { return len(s.held) > 0 }
