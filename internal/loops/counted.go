package loops

import "bytes"

// countedMax bounds the answers countedAnswer reads: a longer answer is
// not compared loosely (its template is 0).
const countedMax = 4096

// countedAnswer reads an answer as a template and a count: the template
// is its bytes with every number masked (a date-time, an id of more than
// six digits, a generated token masked whole, uncounted), and the count
// is the numbers of six digits or fewer that remain (a row
// number, an attempt, a sequence: a JSON number, a cell's row in
// "A42:D42", a path's "attempts/2"). A number beside a space is a word
// of the text ("3 failed", "Post 12") and stays in the template. Two answers of one write made again
// that share a template and whose counts each grow by one step each time
// moved only in what the write itself made: a stamp, a fresh id, the
// next row. Its template is 0 for an answer longer than countedMax or
// that holds no number.
func countedAnswer(b []byte) (tmpl uint64, cs counts) {
	if len(b) > countedMax {
		return 0, cs
	}
	h, span, checked := uint64(1), 0, 0
	numbers := false
	for i := 0; i < len(b); {
		if !isDigit(b[i]) {
			i++
			continue
		}
		numbers = true
		if i >= checked { // a word with a digit: generated as a whole?
			ws, we := i, i
			for ws > span && isTokenByte(b[ws-1]) {
				ws--
			}
			for we < len(b) && isTokenByte(b[we]) {
				we++
			}
			checked = we
			if we-ws >= 8 && randomToken(b[ws:we]) {
				h = mix(mix(h, hashBytes(b[span:ws])), 'R')
				span, i = we, we
				continue
			}
		}
		if dl := dateTimeLen(b[i:]); dl > 0 {
			h = mix(mix(h, hashBytes(b[span:i])), 'T')
			i += dl
			span = i
			continue
		}
		e := i
		var v uint64
		for e < len(b) && isDigit(b[e]) {
			v = v*10 + uint64(b[e]-'0')
			e++
		}
		if (i > 0 && b[i-1] == ' ' || e < len(b) && b[e] == ' ') && e-i <= 6 && !attemptBefore(b[:i]) {
			// A number among words ("3 failed", "listitem 4", "rows
			// 1-10") is what the text says: it stays in the template.
			// One of more than six digits is an id there too ("job
			// 9120455"), and one after "attempt" is a re-run's counter
			// ("attempt 3"): what the write itself moved.
			i = e
			continue
		}
		if e-i > 6 {
			h = mix(mix(h, hashBytes(b[span:i])), 'I')
		} else {
			h = mix(mix(h, hashBytes(b[span:i])), '#')
			cs.add(v)
		}
		span, i = e, e
	}
	h = mix(h, hashBytes(b[span:]))
	if !numbers {
		return 0, counts{}
	}
	return h | 1, cs
}

// counts holds an answer's counted numbers: the first len(n) each, the
// rest summed.
type counts struct {
	n    [4]uint32
	rest uint32
	k    uint8
}

func (c *counts) add(v uint64) {
	if int(c.k) < len(c.n) {
		c.n[c.k] = uint32(v)
		c.k++
		return
	}
	c.rest += uint32(v)
}

// steps reports whether the counts a, b, c of three rounds (newest
// first) each grew by one step, or not at all, from c to b to a.
func steps(a, b, c *counts) bool {
	for i := range a.n {
		if s := int64(a.n[i]) - int64(b.n[i]); s < 0 || s != int64(b.n[i])-int64(c.n[i]) {
			return false
		}
	}
	s := int32(a.rest - b.rest)
	return s >= 0 && s == int32(b.rest-c.rest)
}

// attemptBefore reports whether text b ends with the word "attempt",
// "attempts", "retry" or "try", a space and maybe "#" after it: the
// number that follows counts a re-run ("attempt 3", "Retry #2").
func attemptBefore(b []byte) bool {
	b = bytes.TrimRight(b, "#")
	if len(b) == 0 || b[len(b)-1] != ' ' {
		return false
	}
	b = b[:len(b)-1]
	j := len(b)
	for j > 0 && ('a' <= b[j-1] && b[j-1] <= 'z' || 'A' <= b[j-1] && b[j-1] <= 'Z') {
		j--
	}
	w := b[j:]
	for _, k := range [...]string{"attempt", "attempts", "retry", "try"} {
		if len(w) == len(k) && bytes.EqualFold(w, []byte(k)) {
			return true
		}
	}
	return false
}
