package modelproxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/agentreach/reach/internal/redact"
)

// clientEvents reads an SSE stream as a client does (the format's lines
// end with CRLF, LF or a lone CR; an event's data lines are joined with
// LF; a blank line ends the event): each event's data.
func clientEvents(b []byte) []string {
	var events []string
	var data []string
	has := false
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) // the stream's byte order mark, if any
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		var line []byte
		if i < 0 {
			line, b = b, nil
		} else {
			line = b[:i]
			if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
				i++
			}
			b = b[i+1:]
		}
		if len(line) == 0 {
			if has {
				events = append(events, strings.Join(data, "\n"))
			}
			data, has = nil, false
			continue
		}
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, string(bytes.TrimPrefix(d, []byte(" "))))
			has = true
		}
	}
	if has {
		events = append(events, strings.Join(data, "\n"))
	}
	return events
}

// TestPassStreamFramings: a key the model spells across two chunks is
// masked however the endpoint frames its events as the SSE format allows
// (lines that end with a lone CR or CRLF, an event's data on several
// lines), and the text still reads as the client reads it.
func TestPassStreamFramings(t *testing.T) {
	const key = "sk-live-SECRET-9f8e7d"
	red, err := redact.New(&redact.Options{Secrets: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	chunk := func(text, finish string) string {
		c := map[string]any{"index": 0, "delta": map[string]any{"content": text}, "finish_reason": nil}
		if finish != "" {
			c["finish_reason"] = finish
		}
		b, _ := json.Marshal(map[string]any{"object": "chat.completion.chunk", "choices": []any{c}})
		return string(b)
	}
	parts := []string{chunk("the key is sk-live-SEC", ""), chunk("RET-9f8e7d ok", "stop"), "[DONE]"}
	// multiline puts an event's data on two lines, cut before its delta.
	multiline := func(d string) string {
		if i := strings.Index(d, `"delta"`); i > 0 {
			return d[:i] + "\ndata: " + d[i:]
		}
		return d
	}
	framings := map[string]func() string{
		"LF": func() string {
			var s strings.Builder
			for _, p := range parts {
				s.WriteString("data: " + p + "\n\n")
			}
			return s.String()
		},
		"CR": func() string {
			var s strings.Builder
			for _, p := range parts {
				s.WriteString("data: " + p + "\r\r")
			}
			return s.String()
		},
		"a byte order mark first": func() string {
			var s strings.Builder
			s.WriteString("\ufeff")
			for _, p := range parts {
				s.WriteString("data: " + p + "\n\n")
			}
			return s.String()
		},
		"CRLF": func() string {
			var s strings.Builder
			for _, p := range parts {
				s.WriteString("data: " + p + "\r\n\r\n")
			}
			return s.String()
		},
		"data on two lines": func() string {
			var s strings.Builder
			for _, p := range parts {
				s.WriteString("data: " + multiline(p) + "\n\n")
			}
			return s.String()
		},
		"a comment between data lines": func() string {
			var s strings.Builder
			for _, p := range parts {
				s.WriteString("data: " + strings.Replace(multiline(p), "\ndata: ", "\n: ping\ndata: ", 1) + "\n\n")
			}
			return s.String()
		},
	}
	for name, body := range framings {
		t.Run(name, func(t *testing.T) {
			p := &Proxy{opts: Options{Redactor: red}}
			resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body()))}
			w := httptest.NewRecorder()
			a := &answer{}
			if err := p.passStream(w, resp, true, a); err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			done := false
			for _, d := range clientEvents(w.Body.Bytes()) {
				if d == "[DONE]" {
					done = true
					continue
				}
				var v any
				if err := json.Unmarshal([]byte(d), &v); err != nil {
					t.Fatalf("an event's data is not JSON: %q\nthe stream:\n%q", d, w.Body.String())
				}
				collectStrings(v, &text)
			}
			if got := text.String(); strings.Contains(got, "9f8e7d") || !strings.Contains(got, "the key is [REDACTED] ok") {
				t.Errorf("the text read by the client: %q\nthe stream:\n%q", got, w.Body.String())
			}
			if !done {
				t.Errorf("no [DONE] in the stream:\n%q", w.Body.String())
			}
			if got := a.text.String(); !strings.Contains(got, "the key is sk-live-SEC") {
				t.Errorf("the answer's text as noted (for its usage): %q", got)
			}
		})
	}
}

// TestPassEventsCRFraming: a Responses API stream whose lines end with a
// lone CR is read event by event, and a key spelled across two deltas is
// masked.
func TestPassEventsCRFraming(t *testing.T) {
	const key = "sk-live-SECRET-9f8e7d"
	red, err := redact.New(&redact.Options{Secrets: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	for i, d := range []string{"the key is sk-live-SEC", "RET-9f8e7d ok"} {
		b, _ := json.Marshal(map[string]any{"type": "response.output_text.delta", "sequence_number": i, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": d})
		body.WriteString("event: response.output_text.delta\rdata: " + string(b) + "\r\r")
	}
	b, _ := json.Marshal(map[string]any{"type": "response.output_text.done", "sequence_number": 2, "item_id": "msg_1", "output_index": 0, "content_index": 0, "text": "the key is " + key + " ok"})
	body.WriteString("event: response.output_text.done\rdata: " + string(b) + "\r\r")
	body.WriteString("event: response.completed\rdata: {\"type\":\"response.completed\",\"sequence_number\":3,\"response\":{\"id\":\"resp_1\",\"output\":[]}}\r\r")
	p := &Proxy{opts: Options{Redactor: red}}
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body.String()))}
	w := httptest.NewRecorder()
	if err := p.passEvents(w, resp, &answer{}); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, d := range clientEvents(w.Body.Bytes()) {
		var e struct{ Type, Delta string }
		if err := json.Unmarshal([]byte(d), &e); err != nil {
			t.Fatalf("an event's data is not JSON: %q\nthe stream:\n%q", d, w.Body.String())
		}
		if e.Type == "response.output_text.delta" {
			text.WriteString(e.Delta)
		}
	}
	if got := text.String(); strings.Contains(got, "9f8e7d") || got != "the key is [REDACTED] ok" {
		t.Errorf("the deltas read by the client: %q\nthe stream:\n%q", got, w.Body.String())
	}
}

// FuzzSSELines: the stream's lines are the SSE format's (CRLF, LF or a
// lone CR end one), however the stream arrives cut into reads.
func FuzzSSELines(f *testing.F) {
	for _, s := range []string{"data: a\r\rdata: b\r\n\r\n", "a\r", "\r\n\n\r", "x\ry\nz\r\nw", "", "\ufeffdata: a\n", "\xef\xbb", "\ufeff\ufeff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// the reference: each terminator in turn, a CRLF one, after the
		// byte order mark if the stream begins with one.
		var want []string
		b := strings.TrimPrefix(s, "\ufeff")
		for len(b) > 0 {
			i := strings.IndexAny(b, "\r\n")
			if i < 0 {
				want = append(want, b)
				break
			}
			want = append(want, b[:i])
			if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
				i++
			}
			b = b[i+1:]
		}
		for _, r := range []io.Reader{strings.NewReader(s), iotest.OneByteReader(strings.NewReader(s))} {
			sc := bufio.NewScanner(r)
			sc.Split(new(sseLines).split)
			var got []string
			for sc.Scan() {
				got = append(got, sc.Text())
			}
			if sc.Err() != nil || !slices.Equal(got, want) {
				t.Fatalf("%q: lines %q (%v), want %q", s, got, sc.Err(), want)
			}
		}
	})
}

// TestStreamMaskJoinedNames: a key an endpoint spells across the pieces of
// a tool call's function name, its id or the role, which the openai Python
// SDK's stream helper joins, does not reach the client: the piece that
// ends it is masked, wherever it is cut. Names sent whole, or repeated in
// each chunk, pass as they are.
func TestStreamMaskJoinedNames(t *testing.T) {
	const key = "sk-live-SECRET-9f8e7d"
	red, err := redact.New(&redact.Options{Secrets: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	type piece struct{ role, id, name string }
	chunkOf := func(p piece, finish bool) string {
		fn := map[string]any{"arguments": "{}"}
		tc := map[string]any{"index": 0, "function": fn}
		if p.name != "" {
			fn["name"] = p.name
		}
		if p.id != "" {
			tc["id"], tc["type"] = p.id, "function"
		}
		delta := map[string]any{"tool_calls": []any{tc}}
		if p.role != "" {
			delta["role"] = p.role
		}
		c := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
		if finish {
			c["finish_reason"] = "tool_calls"
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{c}})
		return "data: " + string(b) + "\n\n"
	}
	// joined reads the stream as the Python SDK's helper accumulates it.
	joined := func(stream []byte) piece {
		var j piece
		for _, d := range clientEvents(stream) {
			var c struct {
				Choices []struct {
					Delta struct {
						Role      string
						ToolCalls []struct {
							ID       string
							Function struct{ Name string }
						} `json:"tool_calls"`
					}
				}
			}
			if json.Unmarshal([]byte(d), &c) != nil || len(c.Choices) == 0 {
				continue
			}
			j.role += c.Choices[0].Delta.Role
			for _, tc := range c.Choices[0].Delta.ToolCalls {
				j.id += tc.ID
				j.name += tc.Function.Name
			}
		}
		return j
	}
	pass := func(body string) []byte {
		p := &Proxy{opts: Options{Redactor: red}}
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body))}
		w := httptest.NewRecorder()
		if err := p.passStream(w, resp, true, &answer{}); err != nil {
			t.Fatal(err)
		}
		return w.Body.Bytes()
	}
	for cut := 1; cut < len(key); cut++ {
		for _, field := range []string{"role", "id", "name"} {
			first, second := piece{name: "lookup", id: "call_1"}, piece{}
			switch field {
			case "role":
				first.role, second.role = key[:cut], key[cut:]
			case "id":
				first.id, second.id = key[:cut], key[cut:]
			case "name":
				first.name, second.name = key[:cut], key[cut:]
			}
			out := pass(chunkOf(first, false) + chunkOf(second, true) + "data: [DONE]\n\n")
			j := joined(out)
			got := map[string]string{"role": j.role, "id": j.id, "name": j.name}[field]
			if strings.Contains(got, key) || strings.Contains(got, key[cut:]) {
				t.Fatalf("the %s cut at %d, joined: %q\nthe stream:\n%s", field, cut, got, out)
			}
		}
	}
	// Whole names, and names repeated in each chunk, as some servers send
	// them, pass.
	out := pass(chunkOf(piece{role: "assistant", id: "call_1", name: "lookup"}, false) +
		chunkOf(piece{id: "call_1", name: "lookup"}, true) + "data: [DONE]\n\n")
	if j := joined(out); j != (piece{role: "assistant", id: "call_1call_1", name: "lookuplookup"}) {
		t.Errorf("names passed on as %+v\nthe stream:\n%s", j, out)
	}
}

// TestStreamedAnswerWhateverItsType: the answer to a turn that asked for a
// stream is read as an event stream (and a secret split across its chunks
// masked) when its type says so in any case, or when it is not JSON
// whatever its type says, as the openai SDKs read it; a JSON answer is
// read whole, its body intact.
func TestStreamedAnswerWhateverItsType(t *testing.T) {
	const key = "sk-live-SECRET-9f8e7d"
	red, err := redact.New(&redact.Options{Secrets: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	chunk := func(text string) string {
		return `data: {"choices":[{"index":0,"delta":{"content":"` + text + `"},"finish_reason":null}]}` + "\n\n"
	}
	sse := chunk("the key is sk-live-SEC") + chunk("RET-9f8e7d ok") + "data: [DONE]\n\n"
	const whole = `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`
	for _, c := range []struct {
		ctype, body string
		stream      bool
	}{
		{"Text/Event-Stream; charset=utf-8", sse, true},
		{"application/json", sse, true},
		{"", sse, true},
		{"text/plain", sse, true},
		{"application/json", whole, false},
		{"", whole, false},
	} {
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {c.ctype}}, Body: io.NopCloser(strings.NewReader(c.body))}
		if got := streamedAnswer(resp); got != c.stream {
			t.Errorf("%q, %.20q...: streamed %v, want %v", c.ctype, c.body, got, c.stream)
			continue
		}
		w := httptest.NewRecorder()
		p := &Proxy{opts: Options{Redactor: red}}
		if c.stream {
			if err := p.passStream(w, resp, true, &answer{}); err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			for _, d := range clientEvents(w.Body.Bytes()) {
				var v any
				if json.Unmarshal([]byte(d), &v) == nil {
					collectStrings(v, &text)
				}
			}
			if got := text.String(); strings.Contains(got, "9f8e7d") || !strings.Contains(got, "the key is [REDACTED] ok") {
				t.Errorf("%q: the client read %q", c.ctype, got)
			}
		} else {
			if err := p.passWhole(w, resp, chatAPI, &answer{}); err != nil {
				t.Fatal(err)
			}
			if w.Body.String() != whole {
				t.Errorf("%q: the answer passed whole as %s", c.ctype, w.Body.String())
			}
		}
	}
}

// An event whose lines, with no blank line to end it, pass MaxAnswer ends
// the stream with an error, rather than be held however long it grows.
func TestStreamEventTooLarge(t *testing.T) {
	red, err := redact.New(&redact.Options{Secrets: []string{"sk-live-SECRET-9f8e7d"}})
	if err != nil {
		t.Fatal(err)
	}
	line := "data: " + strings.Repeat("x", 64<<10) + "\n"
	n := MaxAnswer/len(line) + 2
	for _, events := range []bool{false, true} {
		var read int
		body := io.NopCloser(&countingReader{r: strings.NewReader(strings.Repeat(line, n)), n: &read})
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: body}
		p := &Proxy{opts: Options{Redactor: red}}
		w := httptest.NewRecorder()
		if events {
			err = p.passEvents(w, resp, &answer{})
		} else {
			err = p.passStream(w, resp, true, &answer{})
		}
		if err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("events %v: an event of %d MiB: %v, want an error", events, n*len(line)>>20, err)
		}
		if read >= n*len(line) {
			t.Errorf("events %v: the stream was read to its end (%d bytes) before the error", events, read)
		}
	}
}

type countingReader struct {
	r io.Reader
	n *int
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	*c.n += k
	return k, err
}
