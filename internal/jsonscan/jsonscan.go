// Package jsonscan finds its way through JSON bytes in place, and escapes
// strings for them: the small pieces that argument normalization
// (internal/callgraph) and the redactor (internal/redact) share.
//
// The Skip functions never fail and never return an index past len(b): on
// input that is not JSON, or is cut short, they give an answer that is
// unspecified but safe to slice with.
package jsonscan

import "unicode/utf8"

// SkipSpace returns the index of the first byte at or after b[i] that is
// not JSON white space, or len(b).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// SkipString returns the index just past the JSON string that starts at
// b[i] (its opening quote), or len(b) if it is not terminated.
func SkipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// SkipValue returns the index just past the JSON value that starts at b[i]:
// a string; an object or array with all it holds; or a number, literal or
// other bare word, up to the next white space or one of ,:[]{}". It returns
// len(b) if the value is cut short or i >= len(b).
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = SkipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	}
	for i < len(b) && !isDelim(b[i]) {
		i++
	}
	return i
}

// isDelim reports whether c ends a number or literal.
func isDelim(c byte) bool {
	switch c {
	case ',', ']', '}', ':', ' ', '\t', '\r', '\n', '"', '[', '{':
		return true
	}
	return false
}

// AppendEscaped appends s escaped for the inside of a JSON string: '"' and
// '\\' behind a backslash, \n, \r and \t as such, the other control
// characters as \u00XX, and each byte of invalid UTF-8 as \ufffd; nothing
// else (no HTML escaping).
func AppendEscaped(dst []byte, s string) []byte { return appendEscaped(dst, s, false) }

// AppendEscapedShort is AppendEscaped with \b and \f also written short
// (as encoding/json writes them), not as \u0008 and \u000c.
func AppendEscapedShort(dst []byte, s string) []byte { return appendEscaped(dst, s, true) }

func appendEscaped(dst []byte, s string, short bool) []byte {
	const hex = "0123456789abcdef"
	run := 0 // s[run:i] needs no escaping
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
		}
		dst = append(dst, s[run:i]...)
		switch {
		case c >= utf8.RuneSelf:
			dst = append(dst, `\ufffd`...)
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case short && c == '\b':
			dst = append(dst, '\\', 'b')
		case short && c == '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		}
		i++
		run = i
	}
	return append(dst, s[run:]...)
}
