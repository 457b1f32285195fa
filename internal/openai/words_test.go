package openai

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestWords: words are counted across the pieces of a stream once each,
// and a word longer than MaxTokenBytes counts once for each MaxTokenBytes
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
		{[]string{strings.Repeat("x", MaxTokenBytes)}, 1},
		{[]string{strings.Repeat("x", MaxTokenBytes), "y"}, 2},
		{[]string{strings.Repeat("x", 10*MaxTokenBytes+1)}, 11},
	} {
		var w Words
		for _, p := range tc.pieces {
			w.Add(p)
		}
		if w.N != tc.want {
			t.Errorf("%q: %d words, want %d", tc.pieces, w.N, tc.want)
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
		{`{"input":"a\tb\u0020c"}`, 3},                // \u0020 is a space
		{`{"input":"\u0020 \u0009 \u000A\u00e9"}`, 1}, // white space escaped is no word
		{`not json`, 0},
		{`{"x":{"text":"a b c"},"x":"d","te\u0078t":"e f"}`, 2}, // a key given twice is its last value
		// A predicted output and metadata are not in the model's context.
		{`{"messages":[{"role":"user","content":"fix the typo"}],"prediction":{"type":"content","content":"The quick brown fox"},"metadata":{"text":"run 7 of the nightly"}}`, 3},
	} {
		if got := PromptWords([]byte(tc.body)); got != tc.want {
			t.Errorf("%s: %d words, want %d", tc.body, got, tc.want)
		}
	}
}

// decodedWords counts the words of the text members of v (decoded JSON)
// as promptWords defines them: its reference.
func decodedWords(w *Words, v any, text bool, keys map[string]bool) {
	switch v := v.(type) {
	case string:
		if text {
			w.Run = 0
			w.Add(v)
			w.Run = 0
		}
	case []any:
		for _, e := range v {
			decodedWords(w, e, text, keys)
		}
	case map[string]any:
		for k, e := range v {
			if !notRendered[k] {
				decodedWords(w, e, keys[k], keys)
			}
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
	f.Add(`{"content":"a\u00a0b c　d\u3000e​f g"}`)
	f.Fuzz(func(t *testing.T, body string) {
		var v any
		if json.Unmarshal([]byte(body), &v) != nil {
			return
		}
		var ref Words
		decodedWords(&ref, v, false, promptTextKeys)
		got := PromptWords([]byte(body))
		if got > ref.N {
			t.Fatalf("%s: promptWords counted %d, the decoded text has %d", body, got, ref.N)
		}
		var aref Words // and so for an answer's unread chunk
		decodedWords(&aref, v, false, answerTextKeys)
		if got := AnswerWords([]byte(body)); got > aref.N {
			t.Fatalf("%s: AnswerWords counted %d, the decoded text has %d", body, got, aref.N)
		}
		// Written with no escape, and no word as long as MaxTokenBytes, the
		// counts agree.
		if out, _ := json.Marshal(v); !strings.Contains(string(out), `\\`) && !longWord(string(out)) {
			if got := PromptWords(out); got != ref.N {
				t.Fatalf("%s: promptWords counted %d, the decoded text has %d", out, got, ref.N)
			}
		}
	})
}

// longWord reports whether s has a word of MaxTokenBytes bytes or more.
func longWord(s string) bool {
	for _, f := range strings.Fields(s) {
		if len(f) >= MaxTokenBytes {
			return true
		}
	}
	return false
}

// TestCounted: a reported usage at or above the words is what is charged;
// one below them (0) is raised to them; none, or a count below zero, is
// the estimate.
func TestCounted(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"one two three"}]}`)
	m := &Message{Content: "a b c d", ToolCalls: []ToolCall{{Function: FunctionCall{Arguments: `{"q": "x y"}`}}}}
	for _, tc := range []struct {
		name string
		u    *Usage
		want Usage
	}{
		{"real", &Usage{PromptTokens: 11, CompletionTokens: 20}, Usage{11, 20}},
		{"zero", &Usage{}, Usage{3, 7}},
		{"low", &Usage{PromptTokens: 2, CompletionTokens: 30}, Usage{3, 30}},
		{"none", nil, Usage{int64((len(body) + 3) / 4), 5}},
		{"negative", &Usage{PromptTokens: -1, CompletionTokens: 9}, Usage{int64((len(body) + 3) / 4), 5}},
	} {
		if got := counted(tc.u, body, m); got != tc.want {
			t.Errorf("%s: counted %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestCountedCustomAndAudio: a custom tool call's input and an answer's
// audio transcript are words of the floor (and bytes of the estimate), as
// a function call's arguments and the content are: an endpoint reporting 0
// tokens that answered in them was charged nothing for them.
func TestCountedCustomAndAudio(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"one"}]}`)
	m := &Message{Audio: &Audio{Transcript: "a b c"}, ToolCalls: []ToolCall{{Type: "custom", Custom: &CustomCall{Name: "run", Input: "d e f g"}}}}
	if got, want := counted(&Usage{}, body, m), (Usage{1, 7}); got != want {
		t.Errorf("reported 0: counted %+v, want %+v", got, want)
	}
	if got, want := counted(nil, body, m), (Usage{int64((len(body) + 3) / 4), 3}); got != want {
		t.Errorf("no usage: counted %+v, want %+v", got, want)
	}
}

// deepBody is a chat request whose tool's parameters nest text n objects
// deep.
func deepBody(n int, text string) []byte {
	return []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":` +
		strings.Repeat(`{"description":`, n) + `"` + text + `"` + strings.Repeat(`}`, n) + `}}]}`)
}

// A value nested deep was read once per level above it (each level skips
// its values to find their ends, then reads each): a 4 MB request, a
// string under 2,000 levels, took reach serve 16.8 s to answer, and a body
// may nest 10,000 deep. Past maxCountDepth one pass counts every string,
// so the levels walked member by member are bounded (9,000 deep walked
// 9,000), and the text down there is still counted.
func TestPromptWordsDeepBounded(t *testing.T) {
	text := strings.TrimSpace(strings.Repeat("word ", 500))
	for _, n := range []int{1, 31, 32, 100, 9000} {
		if got := PromptWords(deepBody(n, text)); got < 501 {
			t.Errorf("%d deep: %d words, want at least the 500 down there and the message's", n, got)
		}
	}
	var w Words
	countValue(&w, deepBody(9000, text), false, promptTextKeys, 0)
	if w.walked > 64 {
		t.Errorf("9,000 deep: %d objects and arrays walked member by member, each reading again all it holds; want at most 64", w.walked)
	}
}
