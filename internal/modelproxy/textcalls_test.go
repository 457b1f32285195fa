package modelproxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/openai"
)

// TestTextAction: the tool call a model writes into its text is read when
// the text is one JSON object naming a tool and its arguments (bare, or in
// the one fenced block of the text), and not otherwise: not a block quoted
// twice, not one mentioned in prose, not a final answer, not arguments that
// are no object, not an object that names two tools. Its key survives a
// client's re-serializing it and tells two thoughts apart.
func TestTextAction(t *testing.T) {
	kaiban := `{"thought":"I look it up.","action":"up__lookup","actionInput":{"q":"refund policy"}}`
	for _, tc := range []struct {
		text, name, args string // name "": none read
	}{
		{kaiban, "up__lookup", `{"q":"refund policy"}`},
		{"\n  " + kaiban + "\n", "up__lookup", `{"q":"refund policy"}`},
		{"Thought: I look it up.\nAction:\n```json\n" + kaiban + "\n```", "up__lookup", `{"q":"refund policy"}`},
		{"```\n{\"action\": \"lookup\", \"action_input\": {\"q\": 1}}\n```", "lookup", `{"q": 1}`},
		{`{"tool":"search","arguments":{}}`, "search", `{}`},
		{`{"name":"get_weather","arguments":{"city":"Oslo"}}`, "get_weather", `{"city":"Oslo"}`},
		// Not a call to read.
		{`{"finalAnswer":"all done","isFinalAnswerReady":true}`, "", ""},
		{`{"action":"Final Answer","action_input":"all done"}`, "", ""},
		{`{"action":"lookup","actionInput":"refund policy"}`, "", ""},
		{`{"action":"lookup","actionInput":[1]}`, "", ""},
		{`{"action":"","actionInput":{}}`, "", ""},
		{`{"action":7,"actionInput":{}}`, "", ""},
		{`{"action":"lookup","actionInput":{},"tool":"refund","args":{}}`, "", ""},
		{kaiban + kaiban, "", ""},
		{kaiban + " and then I will answer", "", ""},
		{"I could call " + kaiban + " next.", "", ""},
		{"```json\n" + kaiban + "\n```\nor\n```json\n" + kaiban + "\n```", "", ""},
		{"```python\n" + kaiban + "\n```", "", ""},
		{`{"action":"lookup","actionInput":{"q":1}`, "", ""},
		{"", "", ""},
		{"{" + strings.Repeat(" ", maxTextAction) + `"action":"lookup","actionInput":{}}`, "", ""},
	} {
		name, args, key, ok := textAction(tc.text)
		if ok != (tc.name != "") || name != tc.name || string(args) != tc.args {
			t.Errorf("textAction(%.80q) = %q, %s, %v; want %q, %s", tc.text, name, args, ok, tc.name, tc.args)
		}
		if ok && !strings.HasPrefix(key, "text_") {
			t.Errorf("textAction(%.80q) key %q", tc.text, key)
		}
	}
	_, _, k1, _ := textAction(kaiban)
	_, _, k2, _ := textAction(`{ "actionInput": {"q": "refund policy"}, "action": "up__lookup", "thought": "I look it up." }`)
	_, _, k3, _ := textAction(`{"thought":"Once more.","action":"up__lookup","actionInput":{"q":"refund policy"}}`)
	if k1 != k2 || k1 == k3 {
		t.Errorf("keys: %q, re-serialized %q (want equal), another thought %q (want another)", k1, k2, k3)
	}
}

// fakeChat is a chat completions endpoint that answers each turn with text
// (streamed in two chunks when the request says stream), or with the API
// tool call of lookup {"q":1} besides the text when withCall.
type fakeChat struct {
	text     string
	withCall bool
}

func (f *fakeChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Stream bool `json:"stream"`
	}
	b, _ := io.ReadAll(r.Body)
	json.Unmarshal(b, &body)
	msg := map[string]any{"role": "assistant", "content": f.text}
	if f.withCall {
		msg["tool_calls"] = []any{map[string]any{"index": 0, "id": "call_api", "type": "function", "function": map[string]any{"name": "lookup", "arguments": `{"q":1}`}}}
	}
	usage := map[string]any{"prompt_tokens": 20, "completion_tokens": 20, "total_tokens": 40}
	if !body.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	half := len(f.text) / 2
	for _, part := range []string{f.text[:half], f.text[half:]} {
		d, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": part}, "finish_reason": nil}}})
		fmt.Fprintf(w, "data: %s\n\n", d)
	}
	d, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "m",
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}, "usage": usage})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", d)
}

func postChat(t *testing.T, url, body string) (request string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("chat turn: %d %s", resp.StatusCode, b)
	}
	return resp.Header.Get(link.HeaderRequest)
}

// TestTextActionLinks: through the proxy, a turn that offered no tools and
// whose answer (whole or streamed) is a ReAct block is the turn an MCP call
// of that tool with those arguments links to, and the next turn, whose
// history holds the block (re-serialized), joins its request (a turn that
// offers tools does not: its client runs the API's calls). What a turn
// offering tools writes, or an answer with a tool call of the API writes
// besides, chooses nothing by its text; a block written by two running
// requests' turns links no call and continues neither.
func TestTextActionLinks(t *testing.T) {
	block := `{"thought":"I look it up.","action":"up__lookup","actionInput":{"q":"refund policy"}}`
	args := []byte(`{"q":"refund policy"}`)
	history := func(assistant string) string {
		c, _ := json.Marshal(assistant)
		return `{"model":"m","messages":[{"role":"system","content":"Answer in JSON."},{"role":"user","content":"refunds?"},` +
			`{"role":"assistant","content":` + string(c) + `},{"role":"user","content":"You got this result from the tool: \"none\""}]}`
	}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv, rt, choices := newResponsesProxy(t, &fakeChat{text: block}, nil)
			first := fmt.Sprintf(`{"model":"m","stream":%v,"messages":[{"role":"system","content":"Answer in JSON."},{"role":"user","content":"refunds?"}]}`, stream)
			req := postChat(t, srv.URL, first)
			turns := modelTurns(rt, req)
			if len(turns) != 1 {
				t.Fatalf("request %s has %d turns", req, len(turns))
			}
			if f, id := choices.Match("up__lookup", []byte(`{"q": "refund policy"}`), nil, ""); f != turns[0] || id != "" {
				t.Errorf("the MCP call of the written block links to %v (id %q), want the turn that wrote it, by no id", f, id)
			}
			if f, _ := choices.Match("up__lookup", []byte(`{"q":"other"}`), nil, ""); f != nil {
				t.Errorf("a call with other arguments links to %v", f)
			}
			// The client sends the block back re-serialized, its members reordered.
			if got := postChat(t, srv.URL, history(`{"action": "up__lookup", "actionInput": {"q": "refund policy"}, "thought": "I look it up."}`)); got != req {
				t.Errorf("the next turn runs in %s, want the request %s of the turn that wrote the block", got, req)
			}
			if got := postChat(t, srv.URL, history(`{"thought":"Another.","action":"up__lookup","actionInput":{"q":"refund policy"}}`)); got == req {
				t.Errorf("a history with a block no turn wrote joined %s", got)
			}
			if got := postChat(t, srv.URL, strings.Replace(history(block), `"messages"`, `"tools":[{"type":"function","function":{"name":"up__lookup"}}],"messages"`, 1)); got == req {
				t.Errorf("a turn that offers tools joined %s by the text of its history", got)
			}
		})
	}
	t.Run("offered tools", func(t *testing.T) {
		srv, _, choices := newResponsesProxy(t, &fakeChat{text: block}, nil)
		req := postChat(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"refunds?"}],"tools":[{"type":"function","function":{"name":"up__lookup"}}]}`)
		if f, _ := choices.Match("up__lookup", args, nil, ""); f != nil {
			t.Errorf("a turn that offered tools chose a call by its text")
		}
		if got := postChat(t, srv.URL, history(block)); got == req {
			t.Errorf("a turn continued %s by the text of a turn that offered tools", req)
		}
	})
	t.Run("API call besides", func(t *testing.T) {
		srv, rt, choices := newResponsesProxy(t, &fakeChat{text: block, withCall: true}, nil)
		req := postChat(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"refunds?"}]}`)
		if f, _ := choices.Match("up__lookup", args, nil, ""); f != nil {
			t.Errorf("an answer with a tool call of the API chose a call by its text too")
		}
		if f, id := choices.Match("lookup", []byte(`{"q":1}`), nil, ""); f == nil || f != modelTurns(rt, req)[0] || id != "call_api" {
			t.Errorf("the API's call links to %v (%q)", f, id)
		}
	})
	t.Run("two runs", func(t *testing.T) {
		srv, _, choices := newResponsesProxy(t, &fakeChat{text: block}, nil)
		first := `{"model":"m","messages":[{"role":"user","content":"refunds?"}]}`
		a, b := postChat(t, srv.URL, first), postChat(t, srv.URL, first)
		if a == b {
			t.Fatalf("two runs in one request %s", a)
		}
		if f, _ := choices.Match("up__lookup", args, nil, ""); f != nil {
			t.Errorf("a call two running requests' turns wrote links to %s", f.Request.ID())
		}
		if got := postChat(t, srv.URL, history(block)); got == a || got == b {
			t.Errorf("a history holding the block both wrote continued %s", got)
		}
	})
}

// heldDone is a chat completions endpoint that streams text in one chunk,
// then the choice's finish_reason, and holds the stream's [DONE] until
// release is closed: a client reads the whole answer before the proxy has
// read the stream's end.
type heldDone struct {
	text    string
	release chan struct{}
}

func (h *heldDone) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range []map[string]any{
		{"index": 0, "delta": map[string]any{"role": "assistant", "content": h.text}, "finish_reason": nil},
		{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"},
	} {
		d, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": []any{c}})
		fmt.Fprintf(w, "data: %s\n\n", d)
	}
	w.(http.Flusher).Flush()
	select {
	case <-h.release:
	case <-r.Context().Done():
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// TestTextActionLinksAtFinish: a tool call a model wrote into a streamed
// answer links the MCP call of it as soon as the client has read the
// choice's finish_reason, before the stream's [DONE] has reached the proxy:
// a client runs the call the text names once the choice is over, and its
// MCP call may come before the proxy reads the rest of the stream (under
// load it did, and linked to no turn). The endpoint here holds [DONE]
// until the call has been matched, so the order is fixed.
func TestTextActionLinksAtFinish(t *testing.T) {
	block := `{"thought":"I look it up.","action":"up__lookup","actionInput":{"q":"refund policy"}}`
	up := &heldDone{text: block, release: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(up.release)
		}
	}
	defer release()
	srv, rt, choices := newResponsesProxy(t, up, nil)
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"system","content":"Answer in JSON."},{"role":"user","content":"refunds?"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chat turn: %s", resp.Status)
	}
	req := resp.Header.Get(link.HeaderRequest)
	sc := bufio.NewScanner(resp.Body)
	finished := false
	for !finished && sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "[DONE]") {
			t.Fatal("the proxy passed on [DONE] the endpoint holds")
		}
		finished = strings.HasPrefix(line, "data:") && strings.Contains(line, `"finish_reason":"stop"`)
	}
	if !finished {
		t.Fatalf("the stream ended before the choice's finish_reason: %v", sc.Err())
	}
	// The client has the whole choice; the proxy has not read [DONE].
	turns := modelTurns(rt, req)
	if len(turns) != 1 {
		t.Fatalf("request %s has %d turns", req, len(turns))
	}
	if f, _ := choices.Match("up__lookup", []byte(`{"q":"refund policy"}`), nil, ""); f != turns[0] {
		t.Errorf("the MCP call of the block the client has read links to %v, want the turn that wrote it", f)
	}
	release()
	rest := ""
	for sc.Scan() {
		rest += sc.Text() + "\n"
	}
	if !strings.Contains(rest, "data: [DONE]") {
		t.Errorf("the rest of the stream: %q, want [DONE]", rest)
	}
}

// TestChoicesEnded: a stream's text is whole when the chunk read ends a
// choice and every choice read so far has ended; not when one of several
// ends first, nor on a chunk that ends none.
func TestChoicesEnded(t *testing.T) {
	var a answer
	for i, step := range []struct {
		chunk []openai.Choice
		want  bool
	}{
		{[]openai.Choice{{Index: 0}, {Index: 1}}, false},
		{[]openai.Choice{{Index: 0, FinishReason: "stop"}}, false},
		{[]openai.Choice{{Index: 1}}, false},
		{nil, false},
		{[]openai.Choice{{Index: 1, FinishReason: "length"}}, true},
		{[]openai.Choice{{Index: 0}}, false}, // a chunk of an ended choice ends nothing
	} {
		if got := a.choicesEnded(step.chunk); got != step.want {
			t.Errorf("chunk %d %+v: %v, want %v", i, step.chunk, got, step.want)
		}
	}
}

// TestChoicesEndedCountsOpen: a model that keeps one choice open and ends
// a new one on each chunk never makes the text whole; the choices not
// ended are counted (open), so that each chunk is read once, not with a
// walk of every choice read before (BenchmarkChoicesEndedHostile); the
// text is whole once the open one ends.
func TestChoicesEndedCountsOpen(t *testing.T) {
	var a answer
	for i, ch := range hostileChoices(500) {
		if a.choicesEnded(ch) {
			t.Fatalf("chunk %d: whole while choice 0 is open", i)
		}
	}
	if a.open != 1 {
		t.Errorf("open = %d after 500 choices ended and one not, want 1", a.open)
	}
	if !a.choicesEnded([]openai.Choice{{Index: 0, FinishReason: "stop"}}) || a.open != 0 {
		t.Errorf("the open choice ended: open = %d, want whole with 0 open", a.open)
	}
	if !a.choicesEnded([]openai.Choice{{Index: 7, FinishReason: "stop"}}) || a.open != 0 {
		t.Errorf("an ended choice ended again: open = %d, want whole with 0 open", a.open)
	}
}

// TestPassStreamToolCallReadsNoChoices: once a stream's answer called a
// tool of the API, its text is told to no one (wroteText), and the
// choices of its later chunks are not noted: a model that sends many
// chunks ending new choices after a tool call costs nothing for them.
func TestPassStreamToolCallReadsNoChoices(t *testing.T) {
	var body strings.Builder
	body.WriteString(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{}"}}]}}]}` + "\n\n")
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&body, `data: {"choices":[{"index":%d,"delta":{"content":"x"},"finish_reason":"stop"}]}`+"\n\n", i)
	}
	body.WriteString("data: [DONE]\n\n")
	told := 0
	a := &answer{wrote: func(string) { told++ }}
	p := &Proxy{}
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body.String()))}
	if err := p.passStream(httptest.NewRecorder(), resp, true, a); err != nil {
		t.Fatal(err)
	}
	if told != 0 {
		t.Errorf("the text of an answer that called a tool was told %d times, want none", told)
	}
	if a.finished != nil {
		t.Errorf("the choices of %d chunks after the tool call were noted, want none", len(a.finished))
	}
}

// BenchmarkHistoryIDs: what reading the tool calls an assistant's texts
// write adds to a turn that names no request and offers no tools (texts),
// beside one that offers tools: a ReAct run's history of 10 blocks and
// their results.
func BenchmarkHistoryIDs(b *testing.B) {
	var msgs []any
	msgs = append(msgs, map[string]any{"role": "system", "content": strings.Repeat("Answer in JSON. ", 40)})
	for i := range 10 {
		block := fmt.Sprintf(`{"thought":"I look it up.","action":"up__lookup","actionInput":{"q":"topic %d"}}`, i)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": block},
			map[string]any{"role": "user", "content": "You got this result from the tool: \"found nothing new\""})
	}
	raw, _ := json.Marshal(msgs)
	for _, texts := range []bool{false, true} {
		b.Run(fmt.Sprintf("texts=%v", texts), func(b *testing.B) {
			for b.Loop() {
				if ids := historyIDs(raw, texts); len(ids) != map[bool]int{false: 0, true: 10}[texts] {
					b.Fatalf("%d ids", len(ids))
				}
			}
		})
	}
}
