// Package jsonscan finds its way through JSON bytes in place, and escapes
// strings for them: the small pieces that argument normalization
// (internal/callgraph), the redactor (internal/redact) and the MCP wire
// (internal/mcpwire) share. AppendEscaped, AppendEscapedShort and
// AppendQuoted are the one JSON string escaper, at three strengths, and
// AppendUnescape the one unescaper.
//
// The Skip functions never fail and never return an index past len(b): on
// input that is not JSON, or is cut short, they give an answer that is
// unspecified but safe to slice with.
package jsonscan

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

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
func AppendEscaped(dst []byte, s string) []byte { return appendEscaped(dst, s, minimal) }

// AppendEscapedShort is AppendEscaped with \b and \f also written short
// (as encoding/json writes them), not as \u0008 and \u000c.
func AppendEscapedShort(dst []byte, s string) []byte { return appendEscaped(dst, s, short) }

// AppendQuoted appends s as a JSON string, quotes included, byte for byte
// as encoding/json writes it: AppendEscapedShort, and HTML-safe (<, > and &
// as \u003c, \u003e and \u0026) with U+2028 and U+2029 escaped.
func AppendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s, asEncodingJSON)
	return append(dst, '"')
}

// escaping is how much appendEscaped escapes beyond what JSON requires.
type escaping uint8

const (
	minimal        escaping = iota // what JSON requires
	short                          // and \b and \f written short
	asEncodingJSON                 // short, HTML-safe, U+2028 and U+2029 escaped
)

// plain[c] is true for the ASCII bytes that need no escaping (HTML-safe:
// plainHTML).
var plain, plainHTML = func() (p, h [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		p[c] = c != '"' && c != '\\'
		h[c] = p[c] && c != '<' && c != '>' && c != '&'
	}
	return p, h
}()

// appendEscaped is the one JSON string escaper; esc says how much it
// escapes.
func appendEscaped(dst []byte, s string, esc escaping) []byte {
	const hex = "0123456789abcdef"
	safe := &plain
	if esc == asEncodingJSON {
		safe = &plainHTML
	}
	run := 0 // s[run:i] needs no escaping
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[run:i]...)
				dst = append(dst, `\ufffd`...)
				i++
				run = i
				continue
			}
			if esc == asEncodingJSON && (r == '\u2028' || r == '\u2029') {
				dst = append(dst, s[run:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
				i += size
				run = i
				continue
			}
			i += size
			continue
		}
		dst = append(dst, s[run:i]...)
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case esc != minimal && c == '\b':
			dst = append(dst, '\\', 'b')
		case esc != minimal && c == '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		}
		i++
		run = i
	}
	return append(dst, s[run:]...)
}

// AppendUnescape decodes the escape at b[i] (a backslash) of a JSON string,
// appends what it stands for to dst and returns the index after it: a \u
// escape of a UTF-16 surrogate pair takes the second escape with it, and a
// surrogate that is not half of a pair stands for U+FFFD, as encoding/json
// decodes them. ok is false if b[i:] is no escape (an unknown one, bad hex
// digits, nothing after the backslash); dst is then as given. It is the
// one JSON string unescaper: the redactor and the policy engine's argument
// reader decode escapes with it.
func AppendUnescape(dst, b []byte, i int) (out []byte, next int, ok bool) {
	if i+1 >= len(b) || b[i] != '\\' {
		return dst, i, false
	}
	switch c := b[i+1]; c {
	case '"', '\\', '/':
		return append(dst, c), i + 2, true
	case 'b':
		return append(dst, '\b'), i + 2, true
	case 'f':
		return append(dst, '\f'), i + 2, true
	case 'n':
		return append(dst, '\n'), i + 2, true
	case 'r':
		return append(dst, '\r'), i + 2, true
	case 't':
		return append(dst, '\t'), i + 2, true
	case 'u':
		r, ok := hex4(b, i+2)
		if !ok {
			return dst, i, false
		}
		next = i + 6
		if utf16.IsSurrogate(r) {
			r2, ok := rune(0), false
			if next+6 <= len(b) && b[next] == '\\' && b[next+1] == 'u' {
				r2, ok = hex4(b, next+2)
			}
			if r = utf16.DecodeRune(r, r2); ok && r != utf8.RuneError {
				next += 6
			} else {
				r = utf8.RuneError
			}
		}
		return utf8.AppendRune(dst, r), next, true
	}
	return dst, i, false
}

// hex4 reads the 4 hex digits at b[i].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// NumbersFit reports whether every number in the JSON text b fits a
// float64, as encoding/json needs of a number it decodes into an any: a
// number past ±1.8e308 makes it refuse the whole value. Only numbers with
// an exponent or of more than 300 bytes are parsed; strings are skipped.
func NumbersFit(b []byte) bool {
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			i = SkipString(b, i)
		case c == '-' || c >= '0' && c <= '9':
			j, exp := i, false
			for j < len(b) && !isDelim(b[j]) {
				exp = exp || b[j] == 'e' || b[j] == 'E'
				j++
			}
			if exp || j-i > 300 {
				if _, err := strconv.ParseFloat(string(b[i:j]), 64); err != nil {
					return false
				}
			}
			i = j
		default:
			i++
		}
	}
	return true
}
