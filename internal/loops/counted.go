package loops

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
	h := uint64(0xcbf29ce484222325)
	const prime = 0x100000001b3
	numbers := false
	for i := 0; i < len(b); {
		c := b[i]
		if !isTokenByte(c) {
			h = (h ^ uint64(c)) * prime
			i++
			continue
		}
		if i == 0 || !isTokenByte(b[i-1]) { // a word starts
			j, digit := i, false
			for j < len(b) && isTokenByte(b[j]) {
				digit = digit || isDigit(b[j])
				j++
			}
			if digit && j-i >= 8 && randomToken(b[i:j]) {
				h = (h ^ uint64(0xff)) * prime
				h = (h ^ uint64('R')) * prime
				numbers = true
				i = j
				continue
			}
		}
		if !isDigit(c) {
			h = (h ^ uint64(c)) * prime
			i++
			continue
		}
		numbers = true
		h = (h ^ uint64(0xff)) * prime
		if dl := dateTimeLen(b[i:]); dl > 0 {
			h = (h ^ uint64('T')) * prime
			i += dl
			continue
		}
		e := i
		var v uint64
		for e < len(b) && isDigit(b[e]) {
			v = v*10 + uint64(b[e]-'0')
			e++
		}
		if i > 0 && b[i-1] == ' ' || e < len(b) && b[e] == ' ' {
			// A number among words ("3 failed", "listitem 4", "rows
			// 1-10") is what the text says: kept as it is.
			for _, c := range b[i:e] {
				h = (h ^ uint64(c)) * prime
			}
		} else if e-i > 6 {
			h = (h ^ uint64('I')) * prime
		} else {
			h = (h ^ uint64('#')) * prime
			cs.add(v)
		}
		i = e
	}
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
