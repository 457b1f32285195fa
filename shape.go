package reach

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// shapeStage (13) shapes a successful result for the model on its way back
// from execute: field selection, flattening, truncation with a note, a
// one-line summary, and a note when the context budget runs low (R9).
func (rt *Runtime) shapeStage(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		res, err := next(ctx, c)
		if err != nil || res == nil {
			return res, err
		}
		if res.Status == StatusSuccess && !res.Replayed {
			rt.shape(c, res)
		}
		if note := lowContextNote(c.req, rt.opts.LowContext); note != "" {
			res.Notes = append(res.Notes, note)
		}
		return res, nil
	}
}

func (rt *Runtime) shape(c *Call, res *Result) {
	s := &c.tool.shape
	data := res.Data
	if len(s.Fields) > 0 || s.Flatten {
		var v any
		if json.Unmarshal(data, &v) == nil {
			if len(s.Fields) > 0 {
				v = selectFields(v, s.Fields)
			}
			if s.Flatten {
				v = flatten(v)
			}
			if b, err := json.Marshal(v); err == nil {
				data = b
			}
		}
	}
	if s.MaxBytes > 0 && len(data) > s.MaxBytes {
		var note string
		data, note = truncate(data, s.MaxBytes)
		res.Notes = append(res.Notes, note)
	}
	res.Data = data
	res.Summary = summarize(data)
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
	return out, fmt.Sprintf("the result was %d bytes; only the first %d are shown, as text. "+
		"Narrow your query (a filter, a smaller limit, fewer fields) to get a complete answer.", len(data), kept)
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

// summarize returns a one-line summary of a JSON result.
func summarize(data []byte) string {
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
		var s string
		if json.Unmarshal(data, &s) == nil {
			return oneLine(s, 100)
		}
	}
	return oneLine(string(data), 100)
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

// lowContextNote says how much of the token budget is left once it is low.
func lowContextNote(r *Request, frac float64) string {
	var note string
	for q := r; q != nil; q = q.parent {
		lim := q.limit.Tokens
		if lim <= 0 {
			continue
		}
		left := lim - q.tokens.Load()
		if float64(left) < frac*float64(lim) {
			note = fmt.Sprintf("your context budget is running low: %d of %d tokens left. Wrap up and answer soon.", max(left, 0), lim)
		}
	}
	return note
}
