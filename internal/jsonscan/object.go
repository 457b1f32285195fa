package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/agentreach/reach/internal/strview"
)

// Members calls f with each member of the JSON object js, its key as
// written (quotes and escapes included) and its value raw. It reports
// false when js is not an object. js must be valid JSON (json.Valid).
func Members(js []byte, f func(key, value []byte)) bool {
	i := SkipSpace(js, 0)
	if i >= len(js) || js[i] != '{' {
		return false
	}
	i = SkipSpace(js, i+1)
	if i < len(js) && js[i] == '}' {
		return true
	}
	for i < len(js) {
		ke := SkipValue(js, i) // the key, a string
		key := js[i:ke]
		i = SkipSpace(js, ke)
		if i >= len(js) || js[i] != ':' {
			return false
		}
		vs := SkipSpace(js, i+1)
		ve := SkipValue(js, vs)
		f(key, js[vs:ve])
		i = SkipSpace(js, ve)
		if i >= len(js) || js[i] != ',' {
			return i < len(js) && js[i] == '}'
		}
		i = SkipSpace(js, i+1)
	}
	return false
}

// Unquote decodes a JSON string token as encoding/json does (escapes
// decoded, a byte that is not UTF-8 read as U+FFFD); ok is false for
// anything else.
func Unquote(tok []byte) (string, bool) {
	if b, plain := Plain(tok); plain {
		return string(b), true
	}
	if s, ok := unescape(tok); ok {
		return s, true
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		return "", false
	}
	return s, true
}

// unescape decodes a JSON string token with escapes in one pass, without
// encoding/json's reflection (a tool's text with a line break was decoded
// so): ok is false for a token that is not valid UTF-8 or holds a bad
// escape, a bare quote or a control character, which Unquote leaves to
// encoding/json.
func unescape(tok []byte) (string, bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' || !utf8.Valid(tok) {
		return "", false
	}
	in := tok[1 : len(tok)-1]
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); {
		switch c := in[i]; {
		case c == '\\':
			var ok bool
			if out, i, ok = AppendUnescape(out, in, i); !ok {
				return "", false
			}
		case c == '"' || c < 0x20:
			return "", false
		default:
			j := i + 1
			for j < len(in) && in[j] != '\\' && in[j] != '"' && in[j] >= 0x20 {
				j++
			}
			out = append(out, in[i:j]...)
			i = j
		}
	}
	return strview.Of(out), true // out is this string's alone
}

// Plain returns what a JSON string token stands for without a copy when
// it is spelled as it reads (no escape, valid UTF-8): the bytes between
// its quotes. plain is false for any other token, a string that Unquote
// must decode included.
func Plain(tok []byte) (b []byte, plain bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' || bytes.IndexByte(tok, '\\') >= 0 || !utf8.Valid(tok) {
		return nil, false
	}
	return tok[1 : len(tok)-1], true
}
