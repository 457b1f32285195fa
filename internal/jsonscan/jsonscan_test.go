package jsonscan_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentreach/reach/internal/jsonscan"
)

func TestSkip(t *testing.T) {
	for _, c := range []struct {
		in       string
		i        int
		str, val int // -1: do not check SkipString
	}{
		{`"ab\"c" ,`, 0, 7, 7},
		{`"ab\"c`, 0, 6, 6}, // unterminated
		{`"ab\`, 0, 4, 4},   // cut after a backslash
		{`{"a":[1,"]}"],"b":{}} x`, 0, -1, 21},
		{`[1, [2, {"c": "}"}], 3`, 0, -1, 22}, // cut short
		{`123 , 4`, 0, -1, 3},
		{`-1.5e3}`, 0, -1, 6},
		{`true]`, 0, -1, 4},
		{`null"x"`, 0, -1, 4},
		{`abc:def`, 0, -1, 3}, // a bare word, as in key=value text
		{`{"a":1}`, 5, -1, 6},
		{`1`, 1, -1, 1}, // at the end
		{`1`, 5, -1, 1}, // past the end
	} {
		if c.str >= 0 {
			if got := jsonscan.SkipString([]byte(c.in), c.i); got != c.str {
				t.Errorf("SkipString(%q, %d) = %d, want %d", c.in, c.i, got, c.str)
			}
		}
		if got := jsonscan.SkipValue([]byte(c.in), c.i); got != c.val {
			t.Errorf("SkipValue(%q, %d) = %d, want %d", c.in, c.i, got, c.val)
		}
	}
	if got := jsonscan.SkipSpace([]byte(" \t\r\n x"), 0); got != 5 {
		t.Errorf("SkipSpace = %d, want 5", got)
	}
	if got := jsonscan.SkipSpace([]byte("  "), 1); got != 2 {
		t.Errorf("SkipSpace at the end = %d, want 2", got)
	}
}

func TestAppendEscaped(t *testing.T) {
	for _, c := range []struct{ in, want, short string }{
		{`plain <&> é`, `plain <&> é`, `plain <&> é`},
		{"q\"b\\n\nr\rt\t", `q\"b\\n\nr\rt\t`, `q\"b\\n\nr\rt\t`},
		{"b\bf\fz\x00\x1f\x7f", `b\u0008f\u000cz\u0000\u001f` + "\x7f", `b\bf\fz\u0000\u001f` + "\x7f"},
		{"bad\xff\xfeend \uFFFD", `bad\ufffd\ufffdend ` + "\uFFFD", `bad\ufffd\ufffdend ` + "\uFFFD"},
		{"\u2028", "\u2028", "\u2028"},
	} {
		if got := string(jsonscan.AppendEscaped([]byte("x"), c.in)); got != "x"+c.want {
			t.Errorf("AppendEscaped(%q) = %q, want %q", c.in, got, "x"+c.want)
		}
		if got := string(jsonscan.AppendEscapedShort(nil, c.in)); got != c.short {
			t.Errorf("AppendEscapedShort(%q) = %q, want %q", c.in, got, c.short)
		}
	}
}

// TestAppendQuoted: AppendQuoted writes what encoding/json writes, byte
// for byte.
func TestAppendQuoted(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " back \ slash`, "ctl \x00\x01\x1f\n\r\t\b\f", "<a href=x>&amp;</a>",
		"ünïcødé ✓ 😀", "bad \xff\xfe utf8", "line\u2028para\u2029end"} {
		want, _ := json.Marshal(s)
		if got := jsonscan.AppendQuoted(nil, s); string(got) != string(want) {
			t.Errorf("AppendQuoted(%q) = %s, want %s", s, got, want)
		}
	}
}

// FuzzAppendQuoted: for any string, AppendQuoted and encoding/json agree.
func FuzzAppendQuoted(f *testing.F) {
	for _, s := range []string{"", "a<b>&c", "\u2028\xff\x00\"\\", "ü\b\f\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := jsonscan.AppendQuoted(nil, s); string(got) != string(want) {
			t.Fatalf("AppendQuoted(%q) = %s, encoding/json %s", s, got, want)
		}
	})
}

// unquote decodes the inside of a JSON string with AppendUnescape; false
// on a bad escape or an unescaped quote.
func unquote(in string) (string, bool) {
	b := []byte(in)
	var out []byte
	for i := 0; i < len(b); {
		switch b[i] {
		case '"':
			return "", false
		case '\\':
			var ok bool
			if out, i, ok = jsonscan.AppendUnescape(out, b, i); !ok {
				return "", false
			}
		default:
			out = append(out, b[i])
			i++
		}
	}
	return string(out), true
}

// checkUnescape holds that AppendUnescape decodes the inside of a JSON
// string as encoding/json does, when that is valid UTF-8 without control
// characters (which encoding/json refuses or replaces itself).
func checkUnescape(t *testing.T, in string) {
	t.Helper()
	if !utf8.ValidString(in) || strings.ContainsFunc(in, func(r rune) bool { return r < 0x20 }) {
		return
	}
	var want string
	werr := json.Unmarshal([]byte(`"`+in+`"`), &want)
	got, ok := unquote(in)
	if ok != (werr == nil) || ok && got != want {
		t.Errorf("unescaping %q = %q, %v; encoding/json %q, %v", in, got, ok, want, werr)
	}
}

// TestAppendUnescape: every escape, surrogate pairs and lone halves, and
// bad escapes decode as encoding/json decodes them.
func TestAppendUnescape(t *testing.T) {
	for _, in := range []string{``, `plain`, `\"\\\/\b\f\n\r\t`, `\u00e9\u00E9`, `\ud83d\ude00`, `\ud83d`, `\ud83dx`, `\ude00\ud83d`,
		`\ud83d\u0041`, `\ud83d\uzzzz`, `\ud83d\ud83d\ude00`, `\u12`, `\u12g4`, `\x`, `\`, `a"b`, `ü\u2028`} {
		checkUnescape(t, in)
	}
	if out, next, ok := jsonscan.AppendUnescape([]byte("keep"), []byte(`\q`), 0); ok || next != 0 || string(out) != "keep" {
		t.Errorf("a bad escape: %q, %d, %v; want dst as given, 0, false", out, next, ok)
	}
}

// FuzzAppendUnescape: for any string inside quotes, AppendUnescape and
// encoding/json agree.
func FuzzAppendUnescape(f *testing.F) {
	for _, s := range []string{`\ud83d\ude00`, `\u00e9\n`, `\ud800\udbff`, `\/\b`} {
		f.Add(s)
	}
	f.Fuzz(checkUnescape)
}

// checkUnquote holds that Unquote decodes a token with an escape as
// encoding/json does, or fails where it fails. (A token without one is
// read as it is spelled: Plain's, for tokens of valid JSON.)
func checkUnquote(t *testing.T, tok string) {
	t.Helper()
	if !strings.Contains(tok, `\`) {
		return
	}
	var want string
	werr := json.Unmarshal([]byte(tok), &want)
	got, ok := jsonscan.Unquote([]byte(tok))
	if ok != (werr == nil) || ok && got != want {
		t.Errorf("Unquote(%q) = %q, %v; encoding/json %q, %v", tok, got, ok, want, werr)
	}
}

// TestUnquote: tokens with escapes, bad UTF-8, control characters, bare
// quotes and bad escapes decode (or fail) as encoding/json decodes them.
func TestUnquote(t *testing.T) {
	for _, tok := range []string{`"line\nbreak"`, `"\"quoted\" \\ \/ \b\f\r\t"`, `"\u00e9 \ud83d\ude00 \ud83d"`,
		`"bad \x escape"`, `"bare\n" quote"`, "\"ctl\\n \x01\"", "\"bad \xff utf8 \\n\"", `"\u12"`, `"unterminated\"`, `"a\t"b"`, `x\`, `"\`} {
		checkUnquote(t, tok)
	}
	tok := []byte(`"one\ntwo"`)
	if n := testing.AllocsPerRun(100, func() { jsonscan.Unquote(tok) }); n > 1 {
		t.Errorf("Unquote of a token with an escape allocates %v times, want 1", n)
	}
}

// FuzzUnquote: for any token, Unquote and encoding/json agree.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"a\nb"`, `"\ud83d\ude00"`, "\"\xff\\t\"", `"\u00"`} {
		f.Add(s)
	}
	f.Fuzz(checkUnquote)
}

// TestNumbersFit: a number past a float64, anywhere in the text and in any
// spelling encoding/json takes, does not fit; one in a string is no number;
// a number that underflows to 0 fits, as encoding/json takes it.
func TestNumbersFit(t *testing.T) {
	long := strings.Repeat("9", 310)
	for _, c := range []struct {
		in   string
		want bool
	}{
		{`{"a":1,"b":[2.5,-3e10,{"c":1E308}]}`, true},
		{`{"a":1e-400}`, true},
		{`{"a":"1e700"}`, true},
		{`{"\"1e700":"x\\"}`, true},
		{`{"":1e700}`, false},
		{`{"a":[1,{"b":-1E+309}]}`, false},
		{`{"a":` + long + `}`, false},
		{`{"a":` + long[:300] + `}`, true},
		{`[true,false,null,0]`, true},
	} {
		if got := jsonscan.NumbersFit([]byte(c.in)); got != c.want {
			t.Errorf("NumbersFit(%.40s) = %v, want %v", c.in, got, c.want)
		}
		var v any
		if err := json.Unmarshal([]byte(c.in), &v); (err == nil) != c.want {
			t.Errorf("%.40s: encoding/json err %v, but the case wants fit=%v", c.in, err, c.want)
		}
	}
}
