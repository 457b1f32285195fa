package modelproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/store"
)

// streamChunks is a model endpoint that streams n events, each made by
// event(i), then the stream's end (end, if not empty).
func streamChunks(n int, event func(i int) string, end string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range n {
			if _, err := io.WriteString(w, event(i)); err != nil {
				return
			}
		}
		io.WriteString(w, end)
	}
}

// TestStreamedTextKeptBounded: a streamed answer's text is kept with its
// model turn (the frame's Text, which the loop guard and a delegation's
// verdict read, for as long as the request lives), but at most MaxAnswer of
// it, as much as a whole answer can hold; the turn is still charged for the
// whole answer (the estimate, when the endpoint reports no usage). Before,
// the turn kept all of a stream's text: an endpoint that streamed on had
// reach hold all it said, in memory, for as long as the request lived.
func TestStreamedTextKeptBounded(t *testing.T) {
	piece := strings.Repeat("a", 1<<20)
	const pieces = 20 // MiB, past MaxAnswer
	for _, tc := range []struct {
		name, path, body string
		up               http.HandlerFunc
	}{
		{"chat", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`,
			streamChunks(pieces, func(int) string {
				return `data: {"choices":[{"index":0,"delta":{"content":"` + piece + `"}}]}` + "\n\n"
			}, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")},
		{"responses", "/v1/responses", `{"model":"m","stream":true,"input":"go"}`,
			streamChunks(pieces, func(i int) string {
				return fmt.Sprintf(`data: {"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"%s"}`, i, piece) + "\n\n"
			}, fmt.Sprintf(`data: {"type":"response.completed","sequence_number":%d,"response":{"id":"resp_b1","output":[]}}`, pieces)+"\n\n")},
	} {
		srv, rt, _ := newResponsesProxy(t, tc.up, nil)
		req, _ := http.NewRequest("POST", srv.URL+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n < pieces<<20 {
			t.Fatalf("%s: the client got %d bytes, want the whole answer (%d MiB)", tc.name, n, pieces)
		}
		turns := modelTurns(rt, resp.Header.Get(link.HeaderRequest))
		if len(turns) != 1 {
			t.Fatalf("%s: %d model turns, want 1", tc.name, len(turns))
		}
		f := turns[0]
		if got := len(f.Text()); got == 0 || got > MaxAnswer {
			t.Errorf("%s: the model turn keeps %d bytes of the answer's text, want some and at most MaxAnswer (%d)", tc.name, got, MaxAnswer)
		}
		if want := int64(pieces<<20) / BytesPerToken; f.Tokens() < want {
			t.Errorf("%s: the turn was charged %d tokens, want at least %d (the whole answer's text, estimated)", tc.name, f.Tokens(), want)
		}
	}
}

// TestStreamedAnswerBounded: a streamed answer is bounded as a whole
// (MaxStream bytes, maxParts texts, tool calls and ids), besides each event
// (MaxAnswer): an endpoint that streams on and on, or names ever new tool
// calls or items, has the stream ended with the API's error,
// model_answer_too_large, once it passed the bound. Before, reach passed on a stream without end,
// and held what it learnt of it (its tool calls, the texts it masks) for as
// long as it went on.
func TestStreamedAnswerBounded(t *testing.T) {
	defer func(l int) { streamLimit = l }(streamLimit)
	streamLimit = 8 << 20 // MaxStream, lowered: 256 MiB through the test would take long
	piece := strings.Repeat("b", 1<<20)
	n := streamLimit>>20 + 4
	for _, tc := range []struct {
		name, path, body string
		up               http.HandlerFunc
	}{
		{"chat", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`,
			streamChunks(n, func(i int) string {
				return fmt.Sprintf(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"call_%d","function":{"name":"f","arguments":"%s"}}]}}]}`, i, i, piece) + "\n\n"
			}, "data: [DONE]\n\n")},
		{"responses", "/v1/responses", `{"model":"m","stream":true,"input":"go"}`,
			streamChunks(n, func(i int) string {
				return fmt.Sprintf(`data: {"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_%d","output_index":%d,"content_index":0,"delta":"%s"}`, i, i, i, piece) + "\n\n"
			}, `data: {"type":"response.completed","sequence_number":1,"response":{"id":"resp_b2","output":[]}}`+"\n\n")},
		{"chat, many tool calls", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`,
			streamChunks(maxParts+10, func(i int) string {
				return fmt.Sprintf(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"call_%d","function":{"name":"f","arguments":"{}"}}]}}]}`, i, i) + "\n\n"
			}, "data: [DONE]\n\n")},
		{"responses, many items", "/v1/responses", `{"model":"m","stream":true,"input":"go"}`,
			streamChunks(maxParts+10, func(i int) string {
				return fmt.Sprintf(`data: {"type":"response.output_item.added","sequence_number":%d,"output_index":%d,"item":{"type":"message","id":"msg_%d"}}`, i, i, i) + "\n\n"
			}, `data: {"type":"response.completed","sequence_number":1,"response":{"id":"resp_b3","output":[]}}`+"\n\n")},
	} {
		srv, _, _ := newResponsesProxy(t, tc.up, nil)
		req, _ := http.NewRequest("POST", srv.URL+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(raw) > streamLimit+2*MaxAnswer {
			t.Errorf("%s: the client got %d MiB, want the stream ended near %d MiB", tc.name, len(raw)>>20, streamLimit>>20)
		}
		events := clientEvents(raw)
		if len(events) == 0 {
			t.Fatalf("%s: no events", tc.name)
		}
		var last struct {
			Code  string `json:"code"`
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		json.Unmarshal([]byte(events[len(events)-1]), &last)
		if last.Error != nil {
			last.Code = last.Error.Code
		}
		if last.Code != "model_answer_too_large" {
			t.Errorf("%s: the stream's last event is %.200q, want the API's error model_answer_too_large", tc.name, events[len(events)-1])
		}
	}
}

// TestInterleavedToolCallDeltas: a chat stream may send a tool call's
// arguments in pieces between another call's (the deltas name their call
// by index; the openai SDKs join them by index, in any order). The call is
// linked by the arguments the agent runs it with, all of them: it used to
// be recorded with the pieces that came before the next call began, and
// an MCP call with its whole arguments matched no turn.
func TestInterleavedToolCallDeltas(t *testing.T) {
	chunk := func(idx int, id, name, args string) string {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{
			map[string]any{"index": idx, "id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}}}}}}})
		return "data: " + string(b) + "\n\n"
	}
	stream := chunk(0, "call_a", "lookup", `{"q":`) + chunk(1, "call_b", "other", `{"x":1}`) + chunk(0, "", "", `"later"}`) +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"
	srv, rt, choices := newResponsesProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, stream)
	}), nil)
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	turns := modelTurns(rt, resp.Header.Get(link.HeaderRequest))
	if len(turns) != 1 {
		t.Fatalf("%d model turns, want 1", len(turns))
	}
	if f, id := choices.Match("lookup", []byte(`{"q":"later"}`), nil, ""); f != turns[0] || id != "call_a" {
		t.Errorf("the call with its whole arguments matched %v (%q), want the turn that chose it (call_a)", f, id)
	}
	if f, id := choices.Match("other", []byte(`{"x":1}`), nil, ""); f != turns[0] || id != "call_b" {
		t.Errorf("the other call matched %v (%q), want the turn (call_b)", f, id)
	}
}

// TestNegativeUsageEstimated: an endpoint that reports usage below zero
// (no count can be) has its turn charged the estimate, as one that reports
// none: its answer was charged nothing (budget.Charge takes a negative
// count as zero), so a budget did not hold against it.
func TestNegativeUsageEstimated(t *testing.T) {
	text := strings.Repeat("word ", 8000) // 40,000 bytes: 10,000 tokens at BytesPerToken
	for _, tc := range []struct{ name, path, body, answer string }{
		{"chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"go"}]}`,
			`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + text + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-5000,"completion_tokens":-5000,"total_tokens":-10000}}`},
		{"responses", "/v1/responses", `{"model":"m","input":"go"}`,
			`{"id":"resp_n1","object":"response","model":"m","output":[{"type":"message","id":"msg_n1","role":"assistant","content":[{"type":"output_text","text":"` + text + `"}]}],"usage":{"input_tokens":10,"output_tokens":-100000}}`},
	} {
		srv, rt, _ := newResponsesProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, tc.answer)
		}), nil)
		req, _ := http.NewRequest("POST", srv.URL+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		turns := modelTurns(rt, resp.Header.Get(link.HeaderRequest))
		if len(turns) != 1 {
			t.Fatalf("%s: %d model turns, want 1", tc.name, len(turns))
		}
		if got, want := turns[0].Tokens(), int64(len(text)/BytesPerToken); got < want {
			t.Errorf("%s: the turn was charged %d tokens, want at least %d (the estimate of its answer)", tc.name, got, want)
		}
	}
}

// countingOwners counts the owners recorded.
type countingOwners struct {
	mu  sync.Mutex
	put int
}

func (c *countingOwners) PutResponseOwner(context.Context, *store.ResponseOwner) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put++
	return nil
}

func (c *countingOwners) GetResponseOwner(context.Context, string) (*store.ResponseOwner, error) {
	return nil, store.ErrNotFound
}

// TestWholeAnswerItemsBounded: each item id of a Responses API answer is
// recorded as its principal's (a store write each, before the answer is
// passed on), and a whole answer may hold 16 MiB of them: at most maxParts
// ids of one answer are recorded (a later turn naming one past it is
// refused, as one reach did not give). Before, an endpoint's answer of
// 200,000 empty items made 200,000 writes.
func TestWholeAnswerItemsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"id":"resp_w1","object":"response","model":"m","output":[`)
	for i := range maxParts + 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"message","id":"msg_%d","content":[]}`, i)
	}
	b.WriteString(`],"usage":{"input_tokens":1,"output_tokens":1}}`)
	answer := b.String()
	owners := &countingOwners{}
	srv := ownersProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}), owners, time.Hour)
	resp, _ := postResponses(t, srv.URL, `{"model":"m","input":"go"}`, map[string]string{"Who": "alice"})
	if resp.StatusCode != 200 {
		t.Fatalf("the turn: %d", resp.StatusCode)
	}
	owners.mu.Lock()
	put := owners.put
	owners.mu.Unlock()
	if put == 0 || put > maxParts+1 {
		t.Errorf("%d owners recorded for one answer, want some and at most %d", put, maxParts+1)
	}
}

// TestToolCallNamesBounded: a stream whose deltas grow one call's name
// without end, or name new calls without end, is followed to a bound: the
// name was kept whole (and copied whole at each delta), and every call,
// empty or not, kept, for as long as the stream went on.
func TestToolCallNamesBounded(t *testing.T) {
	chunk := func(idx int, name string) []byte {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{
			map[string]any{"index": idx, "type": "function", "function": map[string]any{"name": name}}}}}}})
		return b
	}
	names := map[string]int{}
	tc := toolCalls{record: func(id, name string, args []byte) { names[id] = len(name) }}
	piece := strings.Repeat("n", 1000)
	for range 300 {
		tc.add(chunk(0, piece))
	}
	tc.add([]byte(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`))
	if names[""] == 0 || names[""] > maxCallName {
		t.Errorf("a name of 300 deltas of 1000 bytes recorded with %d bytes; want at most %d", names[""], maxCallName)
	}
	many := toolCalls{record: func(string, string, []byte) {}}
	const n = 2000
	for i := range n {
		many.add(chunk(i, ""))
	}
	if many.held < n*callOverhead {
		t.Errorf("%d empty calls held %d bytes; want at least %d", n, many.held, n*callOverhead)
	}
}
