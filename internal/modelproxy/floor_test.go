package modelproxy

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestWords: words are counted across the pieces of a stream once each,
// and a word longer than maxTokenBytes counts once for each maxTokenBytes
// begun.
func TestWords(t *testing.T) {
	for _, tc := range []struct {
		pieces []string
		want   int64
	}{
		{[]string{"hello world"}, 2},
		{[]string{"hel", "lo wor", "ld"}, 2},
		{[]string{"a ", " b", "\n\tc\r"}, 3},
		{[]string{"", "   "}, 0},
		{[]string{strings.Repeat("x", maxTokenBytes)}, 1},
		{[]string{strings.Repeat("x", maxTokenBytes), "y"}, 2},
		{[]string{strings.Repeat("x", 10*maxTokenBytes+1)}, 11},
	} {
		var w words
		for _, p := range tc.pieces {
			w.add(p)
		}
		if w.n != tc.want {
			t.Errorf("%q: %d words, want %d", tc.pieces, w.n, tc.want)
		}
	}
}

// TestPromptWords: of a request, only the text the endpoint renders is
// counted: not the model's name, the roles, ids or an image's data.
func TestPromptWords(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int64
	}{
		{`{"model":"gpt 4 o","messages":[{"role":"user","content":"one two\nthree"}]}`, 3},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"one two"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA AAAA AAAA"}}]}]}`, 2},
		{`{"messages":[{"role":"assistant","tool_calls":[{"id":"call 1","type":"function","function":{"name":"f","arguments":"{\"q\": \"a b\"}"}}]},{"role":"tool","tool_call_id":"call 1","content":"r1 r2"}],"tools":[{"type":"function","function":{"name":"f","description":"find it","parameters":{"type":"object","properties":{"q":{"type":"string","description":"the query"}}}}}]}`, 9},
		{`{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"a b"}]},{"type":"function_call_output","call_id":"c 1","output":"x y z"}],"instructions":"be brief","metadata":{"k":"not counted here"}}`, 7},
		{`{"input":"a\tb\u0020c"}`, 2}, // \u0020 is a space: counted as part of a word (a lower count)
		{`not json`, 0},
		{`{"x":{"text":"a b c"},"x":"d","te\u0078t":"e f"}`, 2}, // a key given twice is its last value

	} {
		if got := promptWords([]byte(tc.body)); got != tc.want {
			t.Errorf("%s: %d words, want %d", tc.body, got, tc.want)
		}
	}
}

// decodedWords counts the words of the text members of v (decoded JSON)
// as promptWords defines them: its reference.
func decodedWords(w *words, v any, text bool) {
	switch v := v.(type) {
	case string:
		if text {
			w.run = 0
			w.add(v)
			w.run = 0
		}
	case []any:
		for _, e := range v {
			decodedWords(w, e, text)
		}
	case map[string]any:
		for k, e := range v {
			decodedWords(w, e, promptTextKeys[k])
		}
	}
}

// FuzzPromptWords: promptWords never counts more than the decoded text
// holds (a count above a real endpoint's would be charged in its place),
// and as many as it when written with no escape, in short words.
func FuzzPromptWords(f *testing.F) {
	f.Add(`{"messages":[{"role":"user","content":"hi there"}]}`)
	f.Add(`{"input":"a\u0020b\\u0020c","instructions":["x y"]}`)
	f.Add(`{"content":{"text":"a\n b"},"text":"\u2028 é"}`)
	f.Fuzz(func(t *testing.T, body string) {
		var v any
		if json.Unmarshal([]byte(body), &v) != nil {
			return
		}
		var ref words
		decodedWords(&ref, v, false)
		got := promptWords([]byte(body))
		if got > ref.n {
			t.Fatalf("%s: promptWords counted %d, the decoded text has %d", body, got, ref.n)
		}
		// Written with no escape, and no word as long as maxTokenBytes, the
		// counts agree.
		if out, _ := json.Marshal(v); !strings.Contains(string(out), `\\`) && !longWord(string(out)) {
			if got := promptWords(out); got != ref.n {
				t.Fatalf("%s: promptWords counted %d, the decoded text has %d", out, got, ref.n)
			}
		}
	})
}

// longWord reports whether s has a word of maxTokenBytes bytes or more.
func longWord(s string) bool {
	for _, f := range strings.Fields(s) {
		if len(f) >= maxTokenBytes {
			return true
		}
	}
	return false
}
