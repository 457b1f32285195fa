package builtin

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/openai"
)

// chatEndpoint is an OpenAI-compatible endpoint: its first answer asks for
// search_kb, its second answers with text; it keeps every request.
type chatEndpoint struct {
	mu    sync.Mutex
	reqs  []openai.Request
	delay time.Duration
}

func (c *chatEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req openai.Request
	json.NewDecoder(r.Body).Decode(&req)
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	n := len(c.reqs)
	c.mu.Unlock()
	if c.delay > 0 {
		select {
		case <-time.After(c.delay):
		case <-r.Context().Done():
			return
		}
	}
	msg := map[string]any{"role": "assistant", "content": "**Refunds** take 5 days."}
	if n == 1 {
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_kb", "type": "function",
			"function": map[string]any{"name": "search_kb", "arguments": `{"query":"refunds"}`}}}}
	}
	json.NewEncoder(w).Encode(map[string]any{"model": "gpt-test-0001", "choices": []any{map[string]any{"index": 0, "message": msg}},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5}})
}

// TestFormatterSendsToolsAndRunsTheirCalls: with a real model endpoint,
// format_answer offers the model search_kb as a function, runs the call
// the model chose under the model's frame, sends the result back after the
// model's own message (tool_call_id), and returns the model's answer.
func TestFormatterSendsToolsAndRunsTheirCalls(t *testing.T) {
	ep := &chatEndpoint{}
	srv := httptest.NewServer(ep)
	defer srv.Close()
	rt := reach.New(nil)
	rt.MustRegister(Tools(rt, NewOpenAI(srv.URL+"/v1", "sk-test", "gpt-test", 5*time.Second))...)
	ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
	defer req.End()
	res := rt.Call(ctx, &reach.Call{ID: "f", Tool: "format_answer", Arguments: json.RawMessage(`{"text":"how do refunds work?"}`)})
	var out struct{ Markdown string }
	if res.Status != reach.StatusSuccess || json.Unmarshal(res.Data, &out) != nil || out.Markdown != "**Refunds** take 5 days." {
		t.Fatalf("format_answer = %s %s", res.Status, res.ModelText())
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if len(ep.reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(ep.reqs))
	}
	first, second := ep.reqs[0], ep.reqs[1]
	if len(first.Tools) != 1 || first.Tools[0].Function.Name != "search_kb" || !strings.Contains(string(first.Tools[0].Function.Parameters), `"query"`) {
		t.Errorf("the model was offered %+v, want search_kb with its schema", first.Tools)
	}
	var asked, answered *openai.Message
	for i := range second.Messages {
		switch m := &second.Messages[i]; m.Role {
		case "assistant":
			asked = m
		case "tool":
			answered = m
		}
	}
	if asked == nil || len(asked.ToolCalls) != 1 || asked.ToolCalls[0].ID != "call_kb" || answered == nil || answered.ToolCallID != "call_kb" ||
		!strings.Contains(answered.Content, "Refund policy") {
		t.Errorf("the second model call's messages = %+v, want the model's tool call and search_kb's result for call_kb", second.Messages)
	}
	var model, kb *reach.Frame
	for _, f := range req.Frames() {
		switch {
		case f.Kind == reach.ModelFrame && model == nil:
			model = f
		case f.Name == "search_kb":
			kb = f
		}
	}
	if kb == nil || kb.CallID != "call_kb" || kb.Parent != model || model.Usage().Model != "gpt-test-0001" {
		t.Errorf("search_kb's frame %+v does not nest under the model's turn, or the answering model is not recorded", kb)
	}
}

// TestFormatterModelNotRetried: a model slower than its timeout fails
// format_answer after one call (a paid call is not retried as a read
// would be), and the failure says the model did not answer.
func TestFormatterModelNotRetried(t *testing.T) {
	ep := &chatEndpoint{delay: 2 * time.Second}
	srv := httptest.NewServer(ep)
	defer srv.Close()
	rt := reach.New(nil)
	rt.MustRegister(Tools(rt, NewOpenAI(srv.URL+"/v1", "", "gpt-test", 200*time.Millisecond))...)
	if tool, _ := rt.Tool("format_answer"); tool.Timeout != 3*200*time.Millisecond+10*time.Second {
		t.Errorf("format_answer's timeout is %s, want three calls of the model's 200ms and 10s", tool.Timeout)
	}
	ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
	defer req.End()
	res := rt.Call(ctx, &reach.Call{ID: "f", Tool: "format_answer", Arguments: json.RawMessage(`{"text":"x"}`)})
	ep.mu.Lock()
	n := len(ep.reqs)
	ep.mu.Unlock()
	if res.Status == reach.StatusSuccess || n != 1 || !strings.Contains(res.ModelText(), "the model endpoint did not answer") {
		t.Errorf("with a slow model: %s after %d model calls, want one call and a failure that says so", res.ModelText(), n)
	}
}

// TestModelToolZeroUsageCharged: a model endpoint that reports a usage of
// 0, or none, is charged what reach counts (the words of the prompt's and
// the answer's text; an estimate without usage) by the built-in model tool
// too, as by the model proxy: before, its turns were charged nothing, so a
// request's token budget never ran out on them.
func TestModelToolZeroUsageCharged(t *testing.T) {
	answer := strings.Repeat("word ", 300)
	for _, usage := range []string{`,"usage":{"prompt_tokens":0,"completion_tokens":0}`, ``} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`+answer+`"}}]`+usage+`}`)
		}))
		rt := reach.New(nil)
		rt.MustRegister(Tools(rt, NewOpenAI(srv.URL+"/v1", "", "m", 5*time.Second))...)
		ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
		res := rt.Call(ctx, &reach.Call{ID: "f", Tool: "format_answer", Arguments: json.RawMessage(`{"text":"how do refunds work?"}`)})
		if res.Status != reach.StatusSuccess {
			t.Fatalf("format_answer = %s %s", res.Status, res.ModelText())
		}
		if got := req.Usage().Tokens; got < 300+4 {
			t.Errorf("usage %q: a turn of 300 words to a prompt of 4 was charged %d tokens, want at least 304", usage, got)
		}
		req.End()
		srv.Close()
	}
}
