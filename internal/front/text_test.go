package front

import (
	"encoding/json"
	"testing"

	"github.com/agentreach/reach"
)

// plainString reads what json.Unmarshal reads into a string, or declines.
func FuzzPlainString(f *testing.F) {
	for _, s := range []string{`"call 1"`, `""`, `"a\"b"`, `"tab	"`, `"caf\u00e9"`, `"café"`, `"a" "b"`, `"a"x`,
		`x"a"`, "\"\xff\"", `"unterminated`, `"`, `"a"b"`, `123`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := plainString(b)
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("plainString(%q) = %q, but json.Unmarshal fails: %v", b, got, err)
		}
		if got != want {
			t.Fatalf("plainString(%q) = %q, json.Unmarshal %q", b, got, want)
		}
	})
}

// A tool's text reaches the client unquoted, escapes or not.
func TestModelTextUnquotes(t *testing.T) {
	for data, want := range map[string]string{`"call 1"`: "call 1", `"a\"b\\c\u00e9"`: `a"b\cé`, `"é"`: "é"} {
		if got := modelText(&reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(data)}); got != want {
			t.Errorf("modelText(%s) = %q, want %q", data, got, want)
		}
	}
}
