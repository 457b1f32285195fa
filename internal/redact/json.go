package redact

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"

	"github.com/agentreach/reach/internal/jsonscan"
	"github.com/agentreach/reach/internal/strview"
)

var quotedMask = []byte(`"` + Mask + `"`)

// isJSON reports whether b is one JSON value.
func isJSON(b []byte) bool { return json.Valid(b) }

// scratch holds decoded strings while a document is walked.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// json appends the valid JSON document b with its secrets masked to dst
// and reports whether anything was masked; if not, it returns b itself.
// It walks b in one loop (no recursion, however deep b nests): every string
// (member names too) is masked as text and written anew if that changed
// it; with full rules, the value of a member with a secret name is
// replaced whole by the mask string; a number or literal that holds a
// registered value is replaced by it too; and the texts of the blocks of a
// "content" array are masked as their concatenation would be.
func (r *Redactor) json(dst, b []byte, set *secretSet, full bool, depth int) ([]byte, bool) {
	eds := r.jsonEdits(nil, b, 0, set, full, depth)
	if len(eds) == 0 {
		return b, false
	}
	return apply(dst, b, merge(eds)), true
}

// jsonEdits appends the edits that mask the secrets of the valid JSON
// document b, which starts at offset off of the text the edits are for.
func (r *Redactor) jsonEdits(eds []edit, b []byte, off int, set *secretSet, full bool, depth int) []edit {
	sp := scratch.Get().(*[]byte)
	defer scratch.Put(sp)
	first := len(eds)
	var done []int // the text members masked as blocks, by their offset
	n := len(b)
	for i := 0; i < n; {
		switch c := b[i]; {
		case c == '"':
			j := jsonscan.SkipString(b, i)
			if len(done) > 0 && done[0] == i {
				done = done[1:]
				i = j
				continue
			}
			k := jsonscan.SkipSpace(b, j)
			member := k < n && b[k] == ':'
			s, scratched := decode((*sp)[:0], b[i:j])
			if scratched {
				*sp = s[:0]
			}
			if out, changed := r.text(nil, s, set, full, depth+1); changed {
				eds = append(eds, edit{i, j, appendQuoted(nil, out)})
			}
			if !member {
				i = j
				continue
			}
			i = k + 1
			v := jsonscan.SkipSpace(b, i)
			if full {
				if secret, count := r.keys.match(s); secret {
					end := jsonscan.SkipValue(b, v)
					if !(count && isNumber(b[v:end])) && !bytes.Equal(b[v:end], quotedMask) {
						eds = append(eds, edit{v, end, quotedMask})
					}
					i = end
					continue
				}
			}
			if v < n && b[v] == '[' && string(s) == "content" {
				var blk []edit
				blk, done = r.blockEdits(b, v, set, full, done)
				eds = append(eds, blk...)
				slices.Sort(done) // a content array inside another's block comes before the rest of the outer

			}
		case c == '-' || ('0' <= c && c <= '9') || c == 't' || c == 'f' || c == 'n':
			j := jsonscan.SkipValue(b, i)
			for _, s := range set.secs {
				if bytes.Contains(b[i:j], s.raw) {
					eds = append(eds, edit{i, j, quotedMask})
					break
				}
			}
			i = j
		default:
			i++
		}
	}
	if off != 0 {
		for i := first; i < len(eds); i++ {
			eds[i].from += off
			eds[i].to += off
		}
	}
	return eds
}

// blockEdits masks the texts of the content blocks of the array at b[v]
// ({"type":"text","text":"..."} elements) as their concatenation would be
// masked, when there are two or more; it returns the edits and appends the
// offsets of the text members it masked to done.
func (r *Redactor) blockEdits(b []byte, v int, set *secretSet, full bool, done []int) ([]edit, []int) {
	var spans [][2]int
	n := len(b)
	for p := jsonscan.SkipSpace(b, v+1); p < n && b[p] != ']'; {
		end := jsonscan.SkipValue(b, p)
		if b[p] == '{' {
			isText, text := false, [2]int{-1, -1}
			for q := jsonscan.SkipSpace(b, p+1); q < end && b[q] == '"'; {
				ke := jsonscan.SkipString(b, q)
				name := b[q:ke]
				q = jsonscan.SkipSpace(b, jsonscan.SkipSpace(b, ke)+1)
				ve := jsonscan.SkipValue(b, q)
				switch string(name) {
				case `"type"`:
					isText = string(b[q:ve]) == `"text"`
				case `"text"`:
					if b[q] == '"' {
						text = [2]int{q, ve}
					}
				}
				if q = jsonscan.SkipSpace(b, ve); q < end && b[q] == ',' {
					q = jsonscan.SkipSpace(b, q+1)
				}
			}
			if isText && text[0] >= 0 {
				spans = append(spans, text)
			}
		}
		if p = jsonscan.SkipSpace(b, end); p < n && b[p] == ',' {
			p = jsonscan.SkipSpace(b, p+1)
		}
	}
	if len(spans) < 2 {
		return nil, done
	}
	texts := make([]string, len(spans))
	for i, sp := range spans {
		t, _ := decode(nil, b[sp[0]:sp[1]])
		texts[i] = string(t)
		done = append(done, sp[0])
	}
	masked := r.blocks(texts, set, full)
	var eds []edit
	for i, sp := range spans {
		if masked[i] != texts[i] {
			eds = append(eds, edit{sp[0], sp[1], appendQuoted(nil, unsafeBytes(masked[i]))})
		}
	}
	if len(eds) == 0 {
		return nil, done
	}
	return eds, done
}

// decode appends the contents of the JSON string token q (quotes
// included) to dst, unescaped, and reports true; when it has no escape,
// it returns them in place, and false.
func decode(dst, q []byte) ([]byte, bool) {
	c := q[1 : len(q)-1]
	if bytes.IndexByte(c, '\\') < 0 {
		return c, false
	}
	out, ok := appendUnescaped(dst, c)
	if !ok {
		return c, false
	}
	return out, true
}

// appendQuoted appends s as a JSON string.
func appendQuoted(dst, s []byte) []byte {
	dst = append(dst, '"')
	dst = jsonscan.AppendEscaped(dst, strview.Of(s))
	return append(dst, '"')
}
