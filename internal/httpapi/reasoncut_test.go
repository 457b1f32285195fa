package httpapi

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCutAtRune: a stop's reason is cut to 500 bytes at a rune boundary.
// Before, a character across byte 500 was cut in two (reason[:500]) and
// the stored reason ended in half a character, invalid UTF-8.
func TestCutAtRune(t *testing.T) {
	for _, c := range []struct {
		name, s, want string
	}{
		{"two-byte across 500", strings.Repeat("a", 499) + "é" + "tail", strings.Repeat("a", 499)},
		{"four-byte across 500", strings.Repeat("a", 498) + "😀", strings.Repeat("a", 498)},
		{"ends at 500", strings.Repeat("a", 498) + "é" + "b", strings.Repeat("a", 498) + "é"},
		{"short", "user pressed stop", "user pressed stop"},
		{"exactly 500", strings.Repeat("é", 250), strings.Repeat("é", 250)},
	} {
		got := cutAtRune(c.s, 500)
		if got != c.want || !utf8.ValidString(got) || len(got) > 500 {
			t.Errorf("%s: cut to %d bytes (valid UTF-8 %v), want %d bytes", c.name, len(got), utf8.ValidString(got), len(c.want))
		}
	}
}
