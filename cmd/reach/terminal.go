package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// What the gateway sends back (request ids, tool arguments, tool errors,
// approval prompts, upstream tool definitions) comes in part from agents,
// tools and upstreams. The commands print it through the functions here,
// so that it cannot move the cursor, rewrite a line, clear the screen or
// begin a line of its own on the operator's terminal.

// printable returns s with every control character (C0, DEL, C1), every
// bidirectional override and every byte that is not UTF-8 written as a
// visible escape: \n, \t, \x1b, \u009b, \u202e, \xff. Printable text,
// non-ASCII included, is left alone.
func printable(s string) string { return escapeControls(s, "", false) }

// printableLines is printable for a multi-line text the command prints as
// it is (a diff, an SVG or DOT document): newlines and tabs are kept.
func printableLines(s string) string { return escapeControls(s, "\n\t", false) }

// printableJSON returns the JSON document b with the same escaping, as
// JSON escapes (\u001b, \u009b, \ufffd for a byte that is not UTF-8), so
// that it is still the same JSON. Newlines and tabs, which are JSON's own
// whitespace, are kept.
func printableJSON(b []byte) []byte { return []byte(escapeControls(string(b), "\n\t", true)) }

// escapeControls escapes the runes [unsafeRune] reports, except those in
// keep; as JSON escapes when inJSON.
func escapeControls(s, keep string, inJSON bool) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return unsafeRune(r) && !strings.ContainsRune(keep, r) }) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			if inJSON {
				b.WriteString(`\ufffd`)
			} else {
				fmt.Fprintf(&b, `\x%02x`, s[0])
			}
		case !unsafeRune(r) || strings.ContainsRune(keep, r):
			b.WriteString(s[:n])
		case inJSON || r > 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			if e, ok := shortEscapes[r]; ok {
				b.WriteString(e)
			} else {
				fmt.Fprintf(&b, `\x%02x`, r)
			}
		}
		s = s[n:]
	}
	return b.String()
}

var shortEscapes = map[rune]string{'\a': `\a`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`, '\v': `\v`}

// unsafeRune reports whether r does something to a terminal or to how the
// text around it is shown: a C0 control, DEL, a C1 control (U+009B is a
// CSI), a line or paragraph separator, or a bidirectional embedding,
// override or isolate.
func unsafeRune(r rune) bool {
	return r < 0x20 || 0x7f <= r && r <= 0x9f || r == 0x2028 || r == 0x2029 ||
		0x202a <= r && r <= 0x202e || 0x2066 <= r && r <= 0x2069
}
