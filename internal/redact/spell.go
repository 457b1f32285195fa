package redact

import (
	"bytes"
	"unicode/utf8"

	"github.com/agentreach/reach/internal/jsonscan"
)

// A value may reach the redactor spelled with escapes: JSON's (\u0073,
// \/), a URL's percent-encoding (%73, %2F, in either case, every byte or
// some), and HTML's character references (&#x73;, &#115;, &amp;). A text
// is read with its escapes read (a view, escapes), and a value found in
// the view masks the escapes it comes from, mixed as they may be. One
// layer: an escape that spells another (%255C, &amp;#115;) is read once.

// appendSpelled appends what the escape at text[i] stands for ('\\', '%'
// or '&'), and returns the index past it; false if it is none.
func appendSpelled(dst, text []byte, i int) ([]byte, int, bool) {
	switch text[i] {
	case '\\':
		return jsonscan.AppendUnescape(dst, text, i)
	case '%':
		if i+2 < len(text) && isHex(text[i+1]) && isHex(text[i+2]) {
			return append(dst, unhex(text[i+1])<<4|unhex(text[i+2])), i + 3, true
		}
	case '&':
		if r, n := charRef(text[i:]); n > 0 {
			return utf8.AppendRune(dst, r), i + n, true
		}
	}
	return dst, i, false
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// maxCharRef is the longest character reference read: &#x10FFFF; and
// &#1114111; (leading zeros beyond it are not read).
const maxCharRef = 10

// namedRef returns the character a reference by name stands for, of
// those of ASCII's punctuation (as HTML escapes it: html.EscapeString, a
// template's escaper, a page), or 0. (A switch: a map's hash was half of
// reading a text of them.)
func namedRef(name []byte) rune {
	switch string(name) {
	case "amp":
		return '&'
	case "lt":
		return '<'
	case "gt":
		return '>'
	case "quot":
		return '"'
	case "apos":
		return '\''
	case "sol":
		return '/'
	case "bsol":
		return '\\'
	case "plus":
		return '+'
	case "equals":
		return '='
	case "colon":
		return ':'
	case "semi":
		return ';'
	case "num":
		return '#'
	case "percnt":
		return '%'
	case "lowbar":
		return '_'
	case "period":
		return '.'
	case "comma":
		return ','
	case "excl":
		return '!'
	case "quest":
		return '?'
	case "commat":
		return '@'
	case "dollar":
		return '$'
	case "ast":
		return '*'
	case "lpar":
		return '('
	case "rpar":
		return ')'
	case "lsqb":
		return '['
	case "rsqb":
		return ']'
	case "lcub":
		return '{'
	case "rcub":
		return '}'
	case "verbar":
		return '|'
	case "tilde":
		return '~'
	case "grave":
		return '`'
	case "Hat":
		return '^'
	case "hyphen", "dash":
		return '-'
	}
	return 0
}

// charRef reads the character reference that s begins with ("&#x73;",
// "&#115;", "&amp;"; the semicolon required) and returns its character
// and length, or 0.
func charRef(s []byte) (rune, int) {
	end := -1
	for k := 1; k < len(s) && k < maxCharRef; k++ {
		if s[k] == ';' {
			end = k
			break
		}
	}
	if end < 2 {
		return 0, 0
	}
	body := s[1:end]
	if body[0] != '#' {
		if r := namedRef(body); r != 0 {
			return r, end + 1
		}
		return 0, 0
	}
	digits, base := body[1:], rune(10)
	if len(digits) > 0 && (digits[0] == 'x' || digits[0] == 'X') {
		digits, base = digits[1:], 16
	}
	if len(digits) == 0 {
		return 0, 0
	}
	var r rune
	for _, c := range digits {
		switch {
		case base == 16 && isHex(c):
			r = r<<4 | rune(unhex(c))
		case '0' <= c && c <= '9':
			r = r*10 + rune(c-'0')
		default:
			return 0, 0
		}
	}
	if r == 0 || r > utf8.MaxRune || 0xD800 <= r && r < 0xE000 {
		return 0, 0
	}
	return r, end + 1
}

// unfinishedRef reports whether s, an '&' or '%' and what follows it to
// the end of a text, may be the beginning of an escape cut short.
func unfinishedRef(s []byte) bool {
	if s[0] == '%' {
		if len(s) >= 3 {
			return false
		}
		for _, c := range s[1:] {
			if !isHex(c) {
				return false
			}
		}
		return true
	}
	if len(s) >= maxCharRef {
		return false
	}
	if len(s) >= 2 && s[1] == '#' {
		d := s[2:]
		if len(d) > 0 && (d[0] == 'x' || d[0] == 'X') {
			d = d[1:]
		}
		for _, c := range d {
			if !isHex(c) {
				return false
			}
		}
		return true
	}
	for _, c := range s[1:] {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// escapeStarts are the bytes an escape begins with.
const escapeStarts = `\%&`

// escapeScan finds the escapes of one text from left to right: each of
// escapeStarts by a search of its own (vectorized) that runs again only
// once the scan has passed the place it found, so that a text is read once
// for each, however many escapes it has (bytes.IndexAny reads it a byte
// at a time).
type escapeScan struct {
	b    []byte
	next [len(escapeStarts)]int // where each is next, at or after the last asked; -1 to find
}

func newEscapeScan(b []byte) escapeScan {
	return escapeScan{b: b, next: [len(escapeStarts)]int{-1, -1, -1}}
}

// from returns where the first escape start at or after i is, or -1.
func (s *escapeScan) from(i int) int {
	best := len(s.b)
	for k := range len(escapeStarts) {
		if s.next[k] < i {
			if j := bytes.IndexByte(s.b[i:], escapeStarts[k]); j < 0 {
				s.next[k] = len(s.b)
			} else {
				s.next[k] = i + j
			}
		}
		best = min(best, s.next[k])
	}
	if best == len(s.b) {
		return -1
	}
	return best
}
