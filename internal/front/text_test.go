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

// TestModelTextAllocations: a success's text without notes is its data,
// unquoted when it is a plain JSON string, with no copy (the answer is
// written out while the data is the call's); notes and errors are
// rendered as before.
func TestModelTextAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	for data, want := range map[string]string{`"call 1"`: "call 1", `{"text":"q1"}`: `{"text":"q1"}`, `""`: "", ``: ""} {
		res := &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(data)}
		if got := modelText(res); got != want {
			t.Errorf("modelText(%s) = %q, want %q", data, got, want)
		}
		if n := testing.AllocsPerRun(100, func() { modelText(res) }); n != 0 {
			t.Errorf("modelText(%s): %v allocations, want 0", data, n)
		}
	}
	res := &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`{"a":1}`), Notes: []string{"cut"}}
	if got, want := modelText(res), "{\"a\":1}\n[reach] cut"; got != want {
		t.Errorf("modelText with a note = %q, want %q", got, want)
	}
}

// FuzzModelTextString: a success's data that json.Unmarshal reads as a
// string reaches the client as that string, escapes decoded in one pass
// (jsonscan.Unquote) or not.
func FuzzModelTextString(f *testing.F) {
	for _, s := range []string{`"call 1"`, `"line\nbreak"`, `"a\"b\\c\u00e9"`, `"\ud83d\ude00 \ud83d"`, "\"\xff\\n\"", `"a\n" "b"`, ` "x\ty" `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want string
		if len(b) == 0 || b[0] != '"' || json.Unmarshal(b, &want) != nil {
			return
		}
		if got := modelText(&reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(b)}); got != want {
			t.Fatalf("modelText(%q) = %q, json.Unmarshal %q", b, got, want)
		}
	})
}
