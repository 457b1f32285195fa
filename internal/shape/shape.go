// Package shape shapes a tool's result for the model (R9): field
// selection, flattening, truncation to valid JSON with a note that says
// what was cut, and a one-line summary.
//
//	data, note := shape.Apply(raw, []string{"id", "customer.name"}, true, 32<<10)
//	summary := shape.Summarize(data)
package shape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Apply shapes data, a tool's JSON result: it keeps only fields (dotted
// paths reach into objects; applied to an object, or to each object of an
// array; none keeps everything), flattens nested objects into dotted keys
// if flat, and cuts the result to maxBytes of valid JSON (if not zero),
// returning a note for the model that says what was cut ("" if nothing
// was). Data that is not JSON is only cut.
func Apply(data []byte, fields []string, flat bool, maxBytes int) ([]byte, string) {
	if len(fields) > 0 || flat {
		var v any
		if json.Unmarshal(data, &v) == nil {
			if len(fields) > 0 {
				v = selectFields(v, fields)
			}
			if flat {
				v = flatten(v)
			}
			if b, err := json.Marshal(v); err == nil {
				data = b
			}
		}
	}
	var note string
	if maxBytes > 0 && len(data) > maxBytes {
		data, note = truncate(data, maxBytes)
	}
	return data, note
}

// selectFields keeps only the named (dotted) fields of an object, or of
// each object in an array.
func selectFields(v any, fields []string) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = selectFields(e, fields)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for _, f := range fields {
			src, dst := x, out
			parts := strings.Split(f, ".")
			for i, p := range parts {
				val, ok := src[p]
				if !ok {
					break
				}
				if i == len(parts)-1 {
					dst[p] = val
					break
				}
				next, ok := val.(map[string]any)
				if !ok {
					break
				}
				d, ok := dst[p].(map[string]any)
				if !ok {
					d = map[string]any{}
					dst[p] = d
				}
				src, dst = next, d
			}
		}
		return out
	}
	return v
}

// flatten turns nested objects into dotted keys; arrays of objects are
// flattened element by element.
func flatten(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = flatten(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		var walk func(prefix string, m map[string]any)
		walk = func(prefix string, m map[string]any) {
			for k, val := range m {
				key := k
				if prefix != "" {
					key = prefix + "." + k
				}
				if inner, ok := val.(map[string]any); ok && len(inner) > 0 {
					walk(key, inner)
					continue
				}
				out[key] = flatten(val)
			}
		}
		walk("", x)
		return out
	}
	return v
}

// truncate cuts data to at most max bytes of valid JSON: an array keeps its
// first items, anything else becomes a cut string. The note tells the model
// what was cut and how to narrow the query.
func truncate(data []byte, max int) ([]byte, string) {
	var items []json.RawMessage
	if data[0] == '[' && json.Unmarshal(data, &items) == nil {
		var b bytes.Buffer
		b.WriteByte('[')
		kept := 0
		for _, it := range items {
			if b.Len()+len(it)+2 > max {
				break
			}
			if kept > 0 {
				b.WriteByte(',')
			}
			b.Write(it)
			kept++
		}
		b.WriteByte(']')
		return b.Bytes(), fmt.Sprintf("the result had %d items (%d bytes); only the first %d are shown. "+
			"Narrow your query (a filter, a smaller limit, fewer fields) to see the rest.", len(items), len(data), kept)
	}
	// Escaped as it is kept, so that the JSON string with its quotes and
	// ellipsis stays within max however much escaping the text needs.
	out := make([]byte, 0, min(max, 2*len(data)+8))
	out = append(out, '"')
	const ellipsis = "…\""
	kept := 0
	var esc []byte
	for kept < len(data) {
		r, size := utf8.DecodeRune(data[kept:])
		esc = appendJSONRune(esc[:0], r, size)
		if len(out)+len(esc)+len(ellipsis) > max {
			break
		}
		out = append(out, esc...)
		kept += size
	}
	out = append(out, ellipsis...)
	return out, fmt.Sprintf("the result was %d bytes; only the first %d are shown"+cutToText+
		"Narrow your query (a filter, a smaller limit, fewer fields) to get a complete answer.", len(data), kept)
}

// cutToText is in the note of a result truncate cut to text, and nowhere else.
const cutToText = ", as text. "

// CutToText reports whether note is the one a result cut to text (a JSON
// string, whatever its data was) carries: such a result is no structured
// result any more. The note is recorded with the result, so a replay of
// it says so too.
func CutToText(note string) bool {
	return strings.HasPrefix(note, "the result was ") && strings.Contains(note, cutToText)
}

// appendJSONRune appends r as it goes in a JSON string, escaped as
// encoding/json escapes it (but not <, > and &); an invalid byte (r is
// RuneError of size 1) becomes U+FFFD.
func appendJSONRune(b []byte, r rune, size int) []byte {
	const hex = "0123456789abcdef"
	switch {
	case r == '"' || r == '\\':
		return append(b, '\\', byte(r))
	case r == '\n':
		return append(b, '\\', 'n')
	case r == '\r':
		return append(b, '\\', 'r')
	case r == '\t':
		return append(b, '\\', 't')
	case r < 0x20:
		return append(b, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
	case r == '\u2028' || r == '\u2029':
		return append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
	case r == utf8.RuneError && size == 1:
		return append(b, `\ufffd`...)
	}
	return utf8.AppendRune(b, r)
}

// Summarize returns a one-line summary of a JSON result: "3 items",
// "object {id, status}", or the start of a string or other value.
func Summarize(data []byte) string {
	if len(data) == 0 {
		return "ok"
	}
	switch data[0] {
	case '[':
		n := countTopLevel(data)
		if n == 1 {
			return "1 item"
		}
		return fmt.Sprintf("%d items", n)
	case '{':
		return topKeys(data, 6)
	case '"':
		if s, ok := plainLine(data, 100); ok {
			return s
		}
		var s string
		if json.Unmarshal(data, &s) == nil {
			return OneLine(s, 100)
		}
	}
	return OneLine(string(data), 100)
}

// plainLine is OneLine(s, n) of data when data is one JSON string that
// needs neither unescaping nor its white space collapsed (printable ASCII,
// no backslash or inner quote, single spaces between words), as most
// tools' text is: one allocation, where decoding and collapsing take five.
// ok is false for anything else.
func plainLine(data []byte, n int) (string, bool) {
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return "", false
	}
	in := data[1 : len(data)-1]
	for i, c := range in {
		switch {
		case c <= ' ' || c >= 0x7f || c == '"' || c == '\\':
			if c != ' ' || i == 0 || i == len(in)-1 || in[i-1] == ' ' {
				return "", false
			}
		}
	}
	if len(in) <= n {
		return string(in), true
	}
	var b strings.Builder
	b.Grow(n + len("…"))
	b.Write(in[:n])
	b.WriteString("…")
	return b.String(), true
}

// topKeys summarizes an object as "object {a, b, …}" from its first n
// top-level keys, without decoding it.
func topKeys(b []byte, n int) string {
	var sb strings.Builder
	sb.Grow(96)
	sb.WriteString("object {")
	depth, keys := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if depth == 1 && isKey(b, j+1) {
				if keys == n {
					sb.WriteString(", …}")
					return sb.String()
				}
				if keys > 0 {
					sb.WriteString(", ")
				}
				if j <= len(b) {
					sb.Write(b[i+1 : min(j, len(b))])
				}
				keys++
			}
			i = j
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	sb.WriteByte('}')
	return sb.String()
}

// isKey reports whether the string that ended before i is followed by ':'.
func isKey(b []byte, i int) bool {
	for ; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case ':':
			return true
		}
		return false
	}
	return false
}

// countTopLevel counts the elements of a JSON array without decoding it.
func countTopLevel(b []byte) int {
	depth, n, inStr, any := 0, 0, false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
			if depth == 1 {
				any = true
			}
		case '[', '{':
			if depth == 1 {
				any = true
			}
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 1 {
				n++
			}
		case ' ', '\t', '\n', '\r':
		default:
			if depth == 1 {
				any = true
			}
		}
	}
	if any {
		n++
	}
	return n
}

// OneLine returns s on one line (runs of white space as one space), cut
// to n bytes with an ellipsis.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
