package modelproxy

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/redact"
)

// TestStreamMaskShapes: a key spelled across two chunks is masked in the
// texts of other delta shapes (an audio transcript, content parts, reasoning
// details) and when a server sends "finish_reason": "" until the end.
func TestStreamMaskShapes(t *testing.T) {
	red, err := redact.New(&redact.Options{Secrets: []string{"sk-live-SECRET-9f8e7d"}})
	if err != nil {
		t.Fatal(err)
	}
	shape := map[string]func(text string) map[string]any{
		"transcript": func(text string) map[string]any { return map[string]any{"audio": map[string]any{"transcript": text}} },
		"content parts": func(text string) map[string]any {
			return map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
		},
		"reasoning details": func(text string) map[string]any {
			return map[string]any{"reasoning_details": []any{map[string]any{"type": "reasoning.text", "index": 0, "text": text}}}
		},
		"empty finish_reason": func(text string) map[string]any { return map[string]any{"content": text} },
	}
	for name, delta := range shape {
		t.Run(name, func(t *testing.T) {
			m := newStreamMask(red)
			var out []byte
			for i, part := range []string{"the key is sk-live-SEC", "RET-9f8e7d ok"} {
				var finish any = ""
				if name != "empty finish_reason" {
					finish = nil
				}
				if i == 1 && name != "empty finish_reason" {
					finish = "stop"
				}
				b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta(part), "finish_reason": finish}}})
				out = append(append(out, m.chunk(b)...), '\n')
			}
			if rest := m.rest(); rest != nil {
				out = append(append(out, rest...), '\n')
			}
			if bytes.Contains(out, []byte("9f8e7d")) {
				t.Errorf("a part of the key got through:\n%s", out)
			}
			var text strings.Builder
			for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
				var v any
				if err := json.Unmarshal(line, &v); err != nil {
					t.Fatalf("a chunk is not JSON: %s", line)
				}
				collectStrings(v, &text)
			}
			if !strings.Contains(text.String(), "the key is [REDACTED] ok") {
				t.Errorf("the texts reassembled as %q", text.String())
			}
		})
	}
}

// TestStreamMaskEscapedArguments: a tool call's arguments streamed
// piecewise that spell a key with JSON escapes (Python's json.dumps writes
// \u00f6 for ö), cut in the middle of an escape, are masked.
func TestStreamMaskEscapedArguments(t *testing.T) {
	red, err := redact.New(&redact.Options{Secrets: []string{"Passwört-2024-xyz"}})
	if err != nil {
		t.Fatal(err)
	}
	args := `{"user":"bob","pwd":"Passw\u00f6rt-2024-xyz"}`
	for cut := 1; cut < len(args); cut++ {
		m := newStreamMask(red)
		var out []byte
		for i, part := range []string{args[:cut], args[cut:]} {
			tc := map[string]any{"index": 0, "function": map[string]any{"arguments": part}}
			if i == 0 {
				tc["id"], tc["type"], tc["function"].(map[string]any)["name"] = "call_1", "function", "login"
			}
			var finish any
			if i == 1 {
				finish = "tool_calls"
			}
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{tc}}, "finish_reason": finish}}})
			out = append(append(out, red.Values(m.chunk(b))...), '\n')
		}
		var text strings.Builder
		for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
			var v any
			if err := json.Unmarshal(line, &v); err != nil {
				t.Fatalf("a chunk is not JSON: %s", line)
			}
			collectStrings(v, &text)
		}
		if got := text.String(); strings.Contains(got, "2024") || !strings.Contains(got, `"pwd":"[REDACTED]"`) {
			t.Fatalf("cut at %d: the arguments reassembled as %s", cut, got)
		}
	}
}

// TestPassStreamMasksEveryLine: a line of the stream that is not data (an
// event's name, a comment, a line a server writes against the format) with
// a configured secret is masked too: a client that reads the stream as text
// sees it.
func TestPassStreamMasksEveryLine(t *testing.T) {
	const key = "sk-live-SECRET-9f8e7d"
	red, err := redact.New(&redact.Options{Secrets: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{opts: Options{Redactor: red}}
	body := ": keep-alive for " + key + "\n" +
		"event: error " + key + "\n" +
		`data: {"choices":[{"index":0,"delta":{"content":"` + key + `"},"finish_reason":"stop"}]}` + "\n\n" +
		"error: invalid key " + key + "\n\n" +
		"data: [DONE]\n\n"
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body))}
	w := httptest.NewRecorder()
	if err := p.passStream(w, resp, true, &answer{}); err != nil {
		t.Fatal(err)
	}
	if got := w.Body.String(); strings.Contains(got, "9f8e7d") || strings.Count(got, "[REDACTED]") != 4 {
		t.Errorf("the stream passed on:\n%s", got)
	}
}

// collectStrings appends the strings of v that carry text, in document
// order of the members that carry text.
func collectStrings(v any, b *strings.Builder) {
	switch v := v.(type) {
	case string:
		b.WriteString(v)
	case []any:
		for _, e := range v {
			collectStrings(e, b)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if !identifying[k] && k != "object" && k != "finish_reason" {
				collectStrings(v[k], b)
			}
		}
	}
}

// TestLogprobsMasked: a secret that a choice's log probabilities spell
// token by token (and in each token's bytes and alternatives) is masked,
// in a whole answer and streamed, and the tokens still make the text.
func TestLogprobsMasked(t *testing.T) {
	const key = "Passwört-2024-xyz"
	red, err := redact.New(&redact.Options{Secrets: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	toks := []string{"The password is ", "Pass", "wört", "-2024", "-xyz", "."}
	entry := func(tok string) map[string]any {
		b := []int{}
		for _, c := range []byte(tok) {
			b = append(b, int(c))
		}
		return map[string]any{"token": tok, "logprob": -0.1, "bytes": b, "top_logprobs": []any{map[string]any{"token": tok, "logprob": -0.1}}}
	}
	check := func(name string, out []byte) {
		t.Helper()
		var text strings.Builder
		for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
			var c struct {
				Choices []struct {
					Logprobs struct {
						Content []struct {
							Token string `json:"token"`
							Bytes []int  `json:"bytes"`
						} `json:"content"`
					} `json:"logprobs"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(line, &c); err != nil {
				t.Fatalf("%s: not JSON: %s", name, line)
			}
			for _, ch := range c.Choices {
				for _, e := range ch.Logprobs.Content {
					b := make([]byte, len(e.Bytes))
					for i, x := range e.Bytes {
						b[i] = byte(x)
					}
					if string(b) != e.Token {
						t.Errorf("%s: token %q has the bytes of %q", name, e.Token, b)
					}
					text.WriteString(e.Token)
				}
			}
		}
		if bytes.Contains(out, []byte("wört")) || bytes.Contains(out, []byte("2024")) || text.String() != "The password is [REDACTED]." {
			t.Errorf("%s: the tokens make %q:\n%s", name, text.String(), out)
		}
	}
	var content []any
	for _, tok := range toks {
		content = append(content, entry(tok))
	}
	whole, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"content": strings.Join(toks, "")},
		"logprobs": map[string]any{"content": content}, "finish_reason": "stop"}}})
	check("whole", red.Values(maskLogprobs(red, whole)))

	m := newStreamMask(red)
	var out []byte
	for i, tok := range toks {
		var finish any
		if i == len(toks)-1 {
			finish = "stop"
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": tok},
			"logprobs": map[string]any{"content": []any{entry(tok)}}, "finish_reason": finish}}})
		out = append(append(out, red.Values(m.chunk(b))...), '\n')
	}
	check("streamed", out)
}

// TestLogprobsMaskedByteTokens: a token that is part of a character's
// bytes (ö split in two) is written "bytes:\xc3", its bytes the real ones:
// the tokens of a secret so split are read by their bytes, and none of
// its pieces is left in a token or in its bytes, whole or streamed.
func TestLogprobsMaskedByteTokens(t *testing.T) {
	const key = "Passwört-2024-xyz"
	red, err := redact.New(&redact.Options{Secrets: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	type tok struct {
		text  string
		bytes []int
	}
	toks := []tok{{"The password is ", nil}, {"Passw", nil}, {`bytes:\xc3`, []int{0xc3}}, {`bytes:\xb6`, []int{0xb6}}, {"rt", nil}, {"-2024", nil}, {"-xyz", nil}, {".", nil}}
	entry := func(tk tok) map[string]any {
		b := tk.bytes
		if b == nil {
			for _, c := range []byte(tk.text) {
				b = append(b, int(c))
			}
		}
		return map[string]any{"token": tk.text, "logprob": -0.1, "bytes": b, "top_logprobs": []any{}}
	}
	check := func(name string, out []byte) {
		t.Helper()
		var all []byte
		for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
			var c struct {
				Choices []struct {
					Logprobs struct {
						Content []struct {
							Token string `json:"token"`
							Bytes []int  `json:"bytes"`
						} `json:"content"`
					} `json:"logprobs"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(line, &c); err != nil {
				t.Fatalf("%s: not JSON: %s", name, line)
			}
			for _, ch := range c.Choices {
				for _, e := range ch.Logprobs.Content {
					for _, x := range e.Bytes {
						all = append(all, byte(x))
					}
				}
			}
		}
		if bytes.Contains(out, []byte("2024")) || bytes.Contains(out, []byte("-xyz")) || string(all) != "The password is [REDACTED]." {
			t.Errorf("%s: the tokens' bytes make %q:\n%s", name, all, out)
		}
	}
	var content []any
	var text []byte
	for _, tk := range toks {
		content = append(content, entry(tk))
		for _, x := range entry(tk)["bytes"].([]int) {
			text = append(text, byte(x))
		}
	}
	whole, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"content": string(text)},
		"logprobs": map[string]any{"content": content}, "finish_reason": "stop"}}})
	check("whole", red.Values(maskLogprobs(red, whole)))

	m := newStreamMask(red)
	var out []byte
	for i, tk := range toks {
		var finish any
		if i == len(toks)-1 {
			finish = "stop"
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{},
			"logprobs": map[string]any{"content": []any{entry(tk)}}, "finish_reason": finish}}})
		out = append(append(out, red.Values(m.chunk(b))...), '\n')
	}
	check("streamed", out)
}
