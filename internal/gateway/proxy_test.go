package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/modelproxy"
	"github.com/agentreach/reach/internal/openai"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeOpenAI is an OpenAI-compatible endpoint whose every answer asks for
// the tool toolName with args (a new tool_call id each time), with usage
// 40+7 tokens; streamed when the request says stream.
type fakeOpenAI struct {
	toolName string
	args     string
	n        atomic.Int64
	mu       sync.Mutex
	bodies   []map[string]any
	parents  []string // the traceparent of each call
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-fake" {
		http.Error(w, `{"error":{"message":"bad path or key"}}`, 401)
		return
	}
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.parents = append(f.parents, r.Header.Get("Traceparent"))
	f.mu.Unlock()
	id := fmt.Sprintf("call_%d", f.n.Add(1))
	tc := map[string]any{"id": id, "type": "function", "function": map[string]any{"name": f.toolName, "arguments": f.args}}
	usage := map[string]any{"prompt_tokens": 40, "completion_tokens": 7, "total_tokens": 47}
	if body["stream"] == true {
		w.Header().Set("Content-Type", "text/event-stream")
		chunks := []map[string]any{
			{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "Let me look."}}}},
			{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": id, "type": "function", "function": map[string]any{"name": f.toolName, "arguments": ""}}}}}}},
			{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}}},
			{"choices": []any{}, "usage": usage},
		}
		for _, c := range chunks {
			b, _ := json.Marshal(c)
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
		"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls",
			"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{tc}}}},
		"usage": usage,
	})
}

// proxyGateway builds a gateway whose model is fake, with extra YAML.
func proxyGateway(t *testing.T, fake *fakeOpenAI, extra string) (*Gateway, *httptest.Server) {
	t.Helper()
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("model:\n  base_url: "+up.URL+"/v1\n  api_key: sk-fake\n  name: fake\n  prices: {fake: {input: 1000, output: 2000}}\n"+extra),
		os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	return g, serveTest(t, g)
}

func postChat(t *testing.T, url string, body string, h map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// TestModelProxy: a chat completion through reach reaches the model with
// the configured key, comes back unchanged, is a model frame of the request
// named in baggage with its tokens and cost, and the tool call the model
// chose nests under that frame when the agent sends it to /v1/calls.
func TestModelProxy(t *testing.T) {
	fake := &fakeOpenAI{toolName: "search_kb", args: `{"query":"refunds"}`}
	g, srv := proxyGateway(t, fake, "examples: true\n")
	resp, b := postChat(t, srv.URL, `{"model":"fake","messages":[{"role":"user","content":"refunds?"}]}`,
		map[string]string{"baggage": "reach.request=p1", "Authorization": "Bearer client-key"})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var out map[string]any
	json.Unmarshal(b, &out)
	if path(out, "choices", 0, "message", "tool_calls", 0, "id") != "call_1" {
		t.Fatalf("answer = %s", b)
	}
	if resp.Header.Get(link.HeaderRequest) != "p1" || resp.Header.Get(link.HeaderFrame) == "" {
		t.Errorf("headers: %s=%q %s=%q", link.HeaderRequest, resp.Header.Get(link.HeaderRequest), link.HeaderFrame, resp.Header.Get(link.HeaderFrame))
	}
	r, ok := g.rt.Lookup("p1")
	if !ok {
		t.Fatal("request p1 was not begun")
	}
	if u := r.Usage(); u.Tokens != 47 || u.Cost < 0.053 || u.Cost > 0.055 {
		t.Errorf("usage = %+v, want 47 tokens costing 0.054", u)
	}
	_, calls := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"call_1","tool":"search_kb","arguments":{"query":"refunds"}}]}`, nil)
	if path(calls, "request_id") != "p1" || path(calls, "results", 0, "status") != "success" {
		t.Fatalf("calls = %v, want request p1, success", calls)
	}
	var model, kb *reach.Frame
	for _, f := range r.Frames() {
		switch {
		case f.Kind == reach.ModelFrame:
			model = f
		case f.CallID == "call_1":
			kb = f
		}
	}
	if model == nil || model.Name != "fake" || model.ID.String() != resp.Header.Get(link.HeaderFrame) {
		t.Fatalf("model frame = %+v", model)
	}
	if kb == nil || kb.Parent != model {
		t.Errorf("search_kb frame = %+v, want a child of the model frame", kb)
	}
}

// TestModelProxyStream: a streamed completion passes through event by
// event; reach asks for the usage chunk and charges it; the streamed tool
// call id links the next call (over MCP, by reach/call_id).
func TestModelProxyStream(t *testing.T) {
	fake := &fakeOpenAI{toolName: "search_kb", args: `{"query":"refunds"}`}
	g, srv := proxyGateway(t, fake, "examples: true\n")
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"fake","stream":true,"messages":[{"role":"user","content":"refunds?"}]}`))
	req.Header.Set(link.HeaderRequest, "s1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, d)
		}
	}
	// The usage chunk reach asked for is not passed to a client that did not.
	if len(events) != 4 || events[3] != "[DONE]" || !strings.Contains(events[1], `"id":"call_1"`) {
		t.Fatalf("events = %q", events)
	}
	fake.mu.Lock()
	so := fake.bodies[0]["stream_options"]
	fake.mu.Unlock()
	if path(so, "include_usage") != true {
		t.Errorf("stream_options = %v, want include_usage", so)
	}
	r, _ := g.rt.Lookup("s1")
	if r == nil || r.Usage().Tokens != 47 {
		t.Fatalf("request s1 = %v", r)
	}
	// A client that asks for the usage chunk gets it.
	_, b := postChat(t, srv.URL, `{"stream":true,"stream_options":{"include_usage":true},"messages":[]}`, map[string]string{link.HeaderRequest: "s2"})
	if !strings.Contains(string(b), `"total_tokens":47`) {
		t.Errorf("a stream with include_usage lacks the usage chunk:\n%s", b)
	}
	cs := connectMCP(t, g, nil)
	if res, text := callText(t, cs, "search_kb", map[string]any{"query": "refunds"}, mcp.Meta{link.MetaCallID: "call_1"}); res.IsError {
		t.Fatalf("search_kb: %s", text)
	}
	for _, f := range r.Frames() {
		if f.CallID == "call_1" && (f.Parent == nil || f.Parent.Kind != reach.ModelFrame || f.Parent.Text() != "Let me look.") {
			t.Errorf("call_1 parent = %+v, want the streamed model frame", f.Parent)
		}
	}
}

// TestModelProxyRefusesOverBudget: a prompt that alone needs more tokens
// than the request has left is refused without asking the model, and so
// is any turn of a stopped request; both are answered so that no client
// retries them (402 budget_exceeded or 403, with x-should-retry: false).
func TestModelProxyRefusesOverBudget(t *testing.T) {
	fake := &fakeOpenAI{toolName: "search_kb", args: `{}`}
	_, srv := proxyGateway(t, fake, "examples: true\nbudgets:\n  default: {tokens: 50}\n")
	h := map[string]string{"baggage": "reach.request=b1"}
	if resp, b := postChat(t, srv.URL, `{"messages":[]}`, h); resp.StatusCode != 200 {
		t.Fatalf("first call: %d %s", resp.StatusCode, b)
	}
	// 47 of 50 used: the second prompt alone is more than the 3 left.
	resp, b := postChat(t, srv.URL, `{"messages":[]}`, h)
	var out map[string]any
	json.Unmarshal(b, &out)
	if resp.StatusCode != http.StatusPaymentRequired || path(out, "error", "type") != "budget_exceeded" || path(out, "error", "code") != "budget_tokens" ||
		!strings.Contains(fmt.Sprint(path(out, "error", "message")), "finish with what you have") {
		t.Errorf("over budget = %d %s, want 402 budget_exceeded telling the model to finish", resp.StatusCode, b)
	}
	if got := resp.Header.Get("X-Should-Retry"); got != "false" {
		t.Errorf("x-should-retry = %q, want false", got)
	}
	if n := fake.n.Load(); n != 1 {
		t.Errorf("the model was asked %d times, want 1", n)
	}
	do(t, "POST", srv.URL+"/v1/requests/b2/cancel", `{"mode":"cancel"}`, nil)
	postChat(t, srv.URL, `{"messages":[]}`, map[string]string{link.HeaderRequest: "b2"})
	do(t, "POST", srv.URL+"/v1/requests/b2/cancel", `{"mode":"cancel"}`, nil)
	resp, b = postChat(t, srv.URL, `{"messages":[]}`, map[string]string{link.HeaderRequest: "b2"})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "request_stopped") || resp.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("stopped request = %d %s, want 403 request_stopped, not to be retried", resp.StatusCode, b)
	}
}

// TestNestedLoopAcrossProcesses is the scenario: an agent asks the
// model (through reach), which picks research; research runs in another
// process (an MCP upstream) and itself asks the model through reach with
// the headers reach gave it; the model picks research again with the same
// arguments; the tool service sends that call to reach, which refuses the
// re-entry, and the graph shows the cycle edge.
func TestNestedLoopAcrossProcesses(t *testing.T) {
	fake := &fakeOpenAI{toolName: "svc__research", args: `{"topic":"refunds"}`}
	var gatewayURL string
	var inner atomic.Value
	svc := mcp.NewServer(&mcp.Implementation{Name: "svc", Version: "1"}, nil)
	mcp.AddTool(svc, &mcp.Tool{Name: "research", Description: "Research a topic with the model.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Topic string `json:"topic"`
		}) (*mcp.CallToolResult, any, error) {
			tp, _ := req.Params.Meta[link.MetaTraceparent].(string)
			rid, _ := req.Params.Meta[link.MetaRequest].(string)
			h := map[string]string{"traceparent": tp, "baggage": "reach.request=" + rid}
			// The tool's own model call, with the propagated headers.
			hreq, _ := http.NewRequestWithContext(ctx, "POST", gatewayURL+"/v1/chat/completions",
				strings.NewReader(`{"messages":[{"role":"user","content":"research `+in.Topic+`"}]}`))
			for k, v := range h {
				hreq.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(hreq)
			if err != nil {
				return nil, nil, err
			}
			var chat map[string]any
			json.NewDecoder(resp.Body).Decode(&chat)
			resp.Body.Close()
			tc := path(chat, "choices", 0, "message", "tool_calls", 0)
			id, _ := path(tc, "id").(string)
			name, _ := path(tc, "function", "name").(string)
			args, _ := path(tc, "function", "arguments").(string)
			// The model chose a tool: run it through reach.
			env, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"call_id": id, "tool": name, "arguments": json.RawMessage(args)}}})
			creq, _ := http.NewRequestWithContext(ctx, "POST", gatewayURL+"/v1/calls", bytes.NewReader(env))
			creq.Header.Set("baggage", "reach.request="+rid)
			cresp, err := http.DefaultClient.Do(creq)
			if err != nil {
				return nil, nil, err
			}
			b, _ := io.ReadAll(cresp.Body)
			cresp.Body.Close()
			inner.Store(string(b))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return svc }, nil))
	t.Cleanup(up.Close)
	g, srv := proxyGateway(t, fake, "upstreams:\n  - name: svc\n    url: "+up.URL+"\n")
	gatewayURL = srv.URL

	// The agent's turn: the model picks svc__research.
	resp, b := postChat(t, srv.URL, `{"messages":[{"role":"user","content":"why refunds?"}]}`, map[string]string{link.HeaderRequest: "loop"})
	if resp.StatusCode != 200 {
		t.Fatalf("agent turn: %d %s", resp.StatusCode, b)
	}
	_, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"loop","tool_calls":[{"call_id":"call_1","tool":"svc__research","arguments":{"topic":"refunds"}}]}`, nil)
	if path(out, "results", 0, "status") != "success" {
		t.Fatalf("outer research = %v", out)
	}
	got, _ := inner.Load().(string)
	if !strings.Contains(got, `"status":"refused"`) || !strings.Contains(got, "svc__research") {
		t.Fatalf("the re-entry through the model = %s, want refused", got)
	}
	r, _ := g.rt.Lookup("loop")
	var outer, again *reach.Frame
	for _, f := range r.Frames() {
		if f.CallID == "call_1" {
			outer = f
		}
	}
	for _, f := range r.Frames() {
		if f.Name == "svc__research" && f != outer {
			again = f
		}
	}
	if outer == nil || again == nil {
		t.Fatalf("frames: outer=%v again=%v", outer, again)
	}
	if again.State() != reach.Refused || again.CycleTo() != outer {
		t.Errorf("inner research: state %v, cycle to %v; want refused, re-entering %s", again.State(), again.CycleTo(), outer.ID)
	}
	// research <- model (the tool's) <- research: the model frame sits between.
	if again.Parent == nil || again.Parent.Kind != reach.ModelFrame || again.Parent.Parent != outer {
		t.Errorf("inner research parent chain = %v, want a model frame under the outer research", again.Parent)
	}
	dot := renderDOT(t, g, "loop")
	if want := fmt.Sprintf("%s -> %s [style=dashed", dotID(again.ID), dotID(outer.ID)); !strings.Contains(dot, want) {
		t.Errorf("DOT lacks the cycle edge %q:\n%s", want, dot)
	}
}

// TestModelProxyStoppedInFlight: a request stopped while its model call is
// in flight gets the OpenAI-style 403 request_stopped (which SDKs do not
// retry), not a 502, and the model frame ends with the stop's cause.
func TestModelProxyStoppedInFlight(t *testing.T) {
	asked := make(chan struct{}, 1)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server notices the client going
		asked <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	cfg, err := config.Parse([]byte("model: {base_url: "+hang.URL+"/v1, api_key: sk-fake, name: fake}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	go func() {
		<-asked
		do(t, "POST", srv.URL+"/v1/requests/stopme/cancel", `{"mode":"cancel","reason":"operator"}`, nil)
	}()
	resp, b := postChat(t, srv.URL, `{"messages":[]}`, map[string]string{link.HeaderRequest: "stopme"})
	var out map[string]any
	json.Unmarshal(b, &out)
	if resp.StatusCode != http.StatusForbidden || path(out, "error", "type") != "request_stopped" || !strings.Contains(string(b), "stopped") {
		t.Errorf("stopped in flight = %d %s, want 403 request_stopped saying the request was stopped", resp.StatusCode, b)
	}
	_, d := do(t, "GET", srv.URL+"/v1/requests/stopme/graph", "", nil)
	if f := path(d, "frames", 0); path(f, "kind") != "model" || !strings.Contains(fmt.Sprint(path(f, "error")), "operator") {
		t.Errorf("model frame = %v, want it ended with the stop's cause", f)
	}
}

// TestModelProxyBoundsRequestIDs: the model proxy refuses a request id
// over 128 characters, as /v1/calls and MCP do, and begins no request.
func TestModelProxyBoundsRequestIDs(t *testing.T) {
	fake := &fakeOpenAI{toolName: "search_kb", args: `{}`}
	g, srv := proxyGateway(t, fake, "")
	long := strings.Repeat("r", 2000) // over 128, within the 16 KiB of headers the server reads
	resp, b := postChat(t, srv.URL, `{"messages":[]}`, map[string]string{link.HeaderRequest: long})
	if resp.StatusCode != 400 || !strings.Contains(string(b), "bad_request_id") {
		t.Errorf("a %d-character request id = %d %s, want 400 bad_request_id", len(long), resp.StatusCode, b)
	}
	if _, ok := g.rt.Lookup(long); ok || fake.n.Load() != 0 {
		t.Errorf("the request was begun (%v) or the model asked (%d times)", ok, fake.n.Load())
	}
	// The call API, from the envelope and from a header alike.
	status, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"`+long+`","tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{}}]}`, nil)
	if status != 400 || path(out, "error", "code") != "bad_request_id" {
		t.Errorf("/v1/calls with a long request id = %d %v", status, out)
	}
	status, out = do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{}}]}`, map[string]string{link.HeaderRequest: long})
	if status != 400 || path(out, "error", "code") != "bad_request_id" {
		t.Errorf("/v1/calls with a long Reach-Request header = %d %v", status, out)
	}
}

// TestModelProxyRefusesUnpricedModelUnderCostBudget: under a cost budget a
// model without a price would cost nothing, so the budget would never run
// out: the proxy refuses it, saying which models are priced; a priced
// model goes through.
func TestModelProxyRefusesUnpricedModelUnderCostBudget(t *testing.T) {
	fake := &fakeOpenAI{toolName: "search_kb", args: `{}`}
	_, srv := proxyGateway(t, fake, "budgets:\n  default: {cost: 0.5}\n")
	h := map[string]string{link.HeaderRequest: "c1"}
	resp, b := postChat(t, srv.URL, `{"model":"fake-2","messages":[]}`, h)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "unpriced_model") || !strings.Contains(string(b), "fake") {
		t.Errorf("an unpriced model under a cost budget = %d %s, want 400 unpriced_model naming the priced ones", resp.StatusCode, b)
	}
	if fake.n.Load() != 0 {
		t.Errorf("the model was asked %d times", fake.n.Load())
	}
	if resp, b := postChat(t, srv.URL, `{"model":"fake","messages":[]}`, h); resp.StatusCode != 200 {
		t.Errorf("a priced model = %d %s", resp.StatusCode, b)
	}
}

// TestWarnsOfUnpricedModelUnderCostBudget: reach validate warns when a
// budget has a cost and the configured model has no price.
func TestWarnsOfUnpricedModelUnderCostBudget(t *testing.T) {
	fake := &fakeOpenAI{toolName: "search_kb", args: `{}`}
	for _, tc := range []struct {
		extra string
		warn  bool
	}{
		{"budgets:\n  default: {cost: 0.5}\n", false}, // fake is priced
		{"budgets:\n  default: {tokens: 100}\n", false},
	} {
		g, _ := proxyGateway(t, fake, tc.extra)
		if got := strings.Contains(strings.Join(g.Warnings(), "\n"), "has no price"); got != tc.warn {
			t.Errorf("%q: warned %v, want %v: %v", tc.extra, got, tc.warn, g.Warnings())
		}
	}
	cfg, err := config.Parse([]byte("examples: true\nmodel: {base_url: http://127.0.0.1:9/v1, name: unpriced}\nbudgets:\n  default: {cost: 0.5}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	if w := strings.Join(g.Warnings(), "\n"); !strings.Contains(w, "budget default has a cost, and the model unpriced has no price") {
		t.Errorf("warnings = %s, want one about the unpriced model", w)
	}
	// No model name: the proxy's default model is the one to price.
	cfg, err = config.Parse([]byte("examples: true\nmodel: {base_url: http://127.0.0.1:9/v1}\nbudgets:\n  default: {cost: 0.5}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g = newTestGateway(t, cfg)
	if w := strings.Join(g.Warnings(), "\n"); !strings.Contains(w, "the model "+openai.DefaultModel+" has no price") {
		t.Errorf("warnings = %s, want one about the default model", w)
	}
}

// modelGateway serves a gateway whose model is the handler h.
func modelGateway(t *testing.T, h http.HandlerFunc, extra string) (*Gateway, string) {
	t.Helper()
	up := httptest.NewServer(h)
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("model: {base_url: '"+up.URL+"/v1', api_key: sk-live-SECRET-9f8e7d, name: fake}\n"+extra), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	return g, serveTest(t, g).URL
}

func requestTokens(t *testing.T, g *Gateway, id string) int64 {
	t.Helper()
	r, _ := g.rt.Lookup(id)
	if r == nil {
		t.Fatalf("no request %s", id)
	}
	return r.Usage().Tokens
}

// TestModelProxyEstimatesMissingUsage: an endpoint that reports no usage
// (it ignores include_usage) is charged an estimate, so a token budget
// still runs out; a whole answer without usage is charged too.
func TestModelProxyEstimatesMissingUsage(t *testing.T) {
	var asked atomic.Int32
	g, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		var body struct {
			Stream bool `json:"stream"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		if !body.Stream {
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":%q}}]}`, strings.Repeat("word ", 100))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"}}]}\n\n", strings.Repeat("word ", 500))
		fmt.Fprint(w, "data: [DONE]\n\n")
	}, "budgets:\n  default: {tokens: 50}\n")
	for range 10 {
		postChat(t, url, `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{link.HeaderRequest: "nousage"})
	}
	if n := asked.Load(); n > 1 {
		t.Errorf("a 50-token budget let %d streamed answers without usage through (charged %d tokens)", n, requestTokens(t, g, "nousage"))
	}
	resp, b := postChat(t, url, `{"messages":[{"role":"user","content":"hi"}]}`, map[string]string{link.HeaderRequest: "whole"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("whole answer: %d %s", resp.StatusCode, b)
	}
	// 500 bytes of text: about 125 tokens, plus the prompt's.
	if got := requestTokens(t, g, "whole"); got < 125 {
		t.Errorf("a whole answer without usage was charged %d tokens, want an estimate of at least 125", got)
	}
}

// TestModelProxyStreamCutChargesUsage: a stream that breaks after its
// usage chunk is charged what it reported, and its frame fails.
func TestModelProxyStreamCutChargesUsage(t *testing.T) {
	g, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":7}}\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection breaks before [DONE]
	}, "")
	postChat(t, url, `{"stream":true,"messages":[]}`, map[string]string{link.HeaderRequest: "cut"})
	if got := requestTokens(t, g, "cut"); got != 47 {
		t.Errorf("a stream cut after its usage was charged %d tokens, want 47", got)
	}
	r, _ := g.rt.Lookup("cut")
	for _, f := range r.Frames() {
		if f.Kind == reach.ModelFrame && f.State() != reach.Failed {
			t.Errorf("the cut stream's model frame is %v, want failed", f.State())
		}
	}
}

// TestModelProxyNullBodies: a body of null is a 400, and stream_options
// null (as clients that serialize None send it) is no options.
func TestModelProxyNullBodies(t *testing.T) {
	_, srv := proxyGateway(t, &fakeOpenAI{toolName: "search_kb", args: `{}`}, "")
	if resp, b := postChat(t, srv.URL, `null`, nil); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "bad_body") {
		t.Errorf("a null body: %d %s, want 400 bad_body", resp.StatusCode, b)
	}
	if resp, b := postChat(t, srv.URL, `{"stream":true,"stream_options":null,"messages":[]}`, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("stream_options null: %d %s, want 200", resp.StatusCode, b)
	}
}

// TestModelProxyMasksTheKey: an endpoint that echoes the key it was given
// in an error (or an answer) does not hand it to the client.
func TestModelProxyMasksTheKey(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusOK} {
		_, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "Incorrect API key provided: " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}})
		}, "")
		for _, body := range []string{`{"messages":[]}`, `{"stream":true,"messages":[]}`} {
			if _, b := postChat(t, url, body, nil); strings.Contains(string(b), "sk-live-SECRET-9f8e7d") {
				t.Errorf("status %d, %s: the model's key reached the client: %s", status, body, b)
			}
		}
	}
}

// TestModelProxyAmbiguousToolCallIDs: an endpoint that gives two requests'
// tool calls the same id links a call with that id to neither request;
// within one request, an id the model chose again links to that request.
func TestModelProxyAmbiguousToolCallIDs(t *testing.T) {
	_, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		id := body.Messages[0].Content // the test names the id the model picks
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant",
			"tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "search_kb", "arguments": "{}"}}}}}},
			"usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1}})
	}, "examples: true\n")
	turn := func(request, id string) {
		postChat(t, url, `{"messages":[{"role":"user","content":"`+id+`"}]}`, map[string]string{link.HeaderRequest: request})
	}
	call := func(id string) any {
		_, out := do(t, "POST", url+"/v1/calls", `{"tool_calls":[{"call_id":"`+id+`","tool":"search_kb","arguments":{"query":"x"}}]}`, nil)
		return path(out, "request_id")
	}
	turn("A", "call_0")
	turn("B", "call_0")
	if got := call("call_0"); got == "A" || got == "B" {
		t.Errorf("a call whose id two requests' models chose ran in request %v", got)
	}
	turn("C", "call_c")
	turn("C", "call_c")
	if got := call("call_c"); got != "C" {
		t.Errorf("a call whose id one request's model chose twice ran in request %v, want C", got)
	}
	// A call that names its request links to that request's turn, whatever
	// other requests' models chose.
	_, out := do(t, "POST", url+"/v1/calls", `{"request_id":"A","tool_calls":[{"call_id":"call_0","tool":"search_kb","arguments":{"query":"y"}}]}`, nil)
	if !nestedUnderModel(t, url, "A", path(out, "results", 0, "frame")) {
		t.Error("a call naming request A with A's model's call id is not nested under A's model turn")
	}
	// Once A and B are over, the id is D's alone.
	for _, r := range []string{"A", "B"} {
		do(t, "POST", url+"/v1/requests/"+r+"/cancel", `{"mode":"cancel","reason":"done"}`, nil)
	}
	turn("D", "call_0")
	if got := call("call_0"); got != "D" {
		t.Errorf("after A and B ended, a call with D's model's id ran in request %v, want D", got)
	}
}

// nestedUnderModel reports whether frame (an id) of request id has a
// model frame as its parent in the request's graph.
func nestedUnderModel(t *testing.T, url, id string, frame any) bool {
	t.Helper()
	_, g := do(t, "GET", url+"/v1/requests/"+id+"/graph", "", nil)
	kinds := map[any]any{}
	frames, _ := g["frames"].([]any)
	for _, f := range frames {
		kinds[path(f, "id")] = path(f, "kind")
	}
	for _, f := range frames {
		if path(f, "id") == frame {
			return kinds[path(f, "parent")] == "model"
		}
	}
	return false
}

// TestModelProxyBaseURLWithQuery: a base_url with a query (Azure's
// api-version) keeps it, after the chat completions path.
func TestModelProxyBaseURLWithQuery(t *testing.T) {
	var gotPath, gotQuery string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotQuery = r.URL.Path, r.URL.RawQuery
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1}})
	}))
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("model: {base_url: '"+up.URL+"/openai/v1?api-version=2024-06-01', name: fake}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	postChat(t, serveTest(t, g).URL, `{"messages":[]}`, nil)
	if gotPath != "/openai/v1/chat/completions" || gotQuery != "api-version=2024-06-01" {
		t.Errorf("the model was asked at path %q, query %q", gotPath, gotQuery)
	}
}

// TestModelProxyAnswerTooLarge: a whole answer over the limit is an error,
// not a cut answer with status 200, not to be retried, and what the model
// produced is charged.
func TestModelProxyAnswerTooLarge(t *testing.T) {
	big := strings.Repeat("x", modelproxy.MaxAnswer+1)
	g, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"%s"}}],"usage":{"prompt_tokens":1,"completion_tokens":5000000}}`, big)
	}, "")
	resp, b := postChat(t, url, `{"messages":[]}`, map[string]string{link.HeaderRequest: "big"})
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "model_answer_too_large") {
		t.Errorf("an answer over %d bytes: %d, %d bytes (%.100s)", modelproxy.MaxAnswer, resp.StatusCode, len(b), b)
	}
	if got := resp.Header.Get("X-Should-Retry"); got != "false" {
		// Charged, and as long again: the openai SDKs retry a 502, each
		// time charged again, unless told not to.
		t.Errorf("an answer over %d bytes: x-should-retry %q, want false", modelproxy.MaxAnswer, got)
	}
	if got := requestTokens(t, g, "big"); got < modelproxy.MaxAnswer/modelproxy.BytesPerToken {
		t.Errorf("the oversized answer was charged %d tokens", got)
	}
}

// TestModelProxyKeepsTheModelsWords: masking the key in a model's answer
// leaves the answer's own members alone, such as logprobs' "token".
func TestModelProxyKeepsTheModelsWords(t *testing.T) {
	for _, stream := range []bool{false, true} {
		_, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
			lp := `"logprobs":{"content":[{"token":"Hello","logprob":-0.1}]}`
			if stream {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello password=hunter2\"},%s}]}\n\ndata: [DONE]\n\n", lp)
				return
			}
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"Hello password=hunter2"},%s}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`, lp)
		}, "")
		_, b := postChat(t, url, fmt.Sprintf(`{"stream":%v,"messages":[]}`, stream), nil)
		if !strings.Contains(string(b), `"token":"Hello"`) || !strings.Contains(string(b), "password=hunter2") {
			t.Errorf("stream %v: the model's answer was changed: %s", stream, b)
		}
	}
}

// TestModelProxyChargesAnAbandonedCall: a client that leaves before the
// model answers is still charged the prompt, which the model read, so that
// leaving early cannot get around a token budget.
func TestModelProxyChargesAnAbandonedCall(t *testing.T) {
	var asked atomic.Int32
	read := make(chan struct{})
	g, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		n := asked.Add(1)
		io.ReadAll(r.Body) // (net/http notices a closed connection once the body is read)
		if n == 1 {
			close(read)
		}
		<-r.Context().Done() // answers only after the caller is gone
	}, "budgets:\n  default: {tokens: 1000}\n") // room for the prompt once, counted upper-leaning (docs/STATE.md "The prompt's estimate")
	prompt := `{"messages":[{"role":"user","content":"` + strings.Repeat("long prompt ", 100) + `"}]}`
	// The client leaves once the model has read the prompt (not on a
	// timer, which on a loaded machine can ring before the gateway has
	// begun the request: then nothing was asked, and nothing is owed).
	ctx, leave := context.WithCancel(t.Context())
	go func() {
		<-read
		leave()
	}()
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(prompt))
	req.Header.Set(link.HeaderRequest, "gone")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the model answered")
	}
	for deadline := time.Now().Add(10 * time.Second); requestTokens(t, g, "gone") == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a call whose client left before the answer was charged nothing")
		}
	}
	resp, b := postChat(t, url, prompt, map[string]string{link.HeaderRequest: "gone"})
	if resp.StatusCode != http.StatusPaymentRequired || asked.Load() != 1 {
		t.Errorf("after the abandoned call: %d %s, the model asked %d times; want a budget refusal without asking", resp.StatusCode, b, asked.Load())
	}
}

// TestModelProxyLinksToolCallsAsTheyStream: a tool call links to its model
// turn as soon as its chunk has passed, while the answer still streams.
func TestModelProxyLinksToolCallsAsTheyStream(t *testing.T) {
	release := make(chan struct{})
	_, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_eager\",\"type\":\"function\",\"function\":{\"name\":\"search_kb\",\"arguments\":\"{}\"}}]}}]}\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "data: [DONE]\n\n")
	}, "examples: true\n")
	defer close(release)
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(`{"stream":true,"messages":[]}`))
	req.Header.Set(link.HeaderRequest, "eager")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "call_eager") {
	}
	_, out := do(t, "POST", url+"/v1/calls", `{"tool_calls":[{"call_id":"call_eager","tool":"search_kb","arguments":{"query":"x"}}]}`, nil)
	if got := path(out, "request_id"); got != "eager" {
		t.Errorf("a tool call sent while its answer streams ran in request %v, want eager", got)
	}
}

// TestModelProxyToolCallIDsOfAnEndedRequest: a call that names a request
// id again after that request ended runs in a new request of that id, not
// in the ended one whose model chose its call id.
func TestModelProxyToolCallIDsOfAnEndedRequest(t *testing.T) {
	g, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant",
			"tool_calls": []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "search_kb", "arguments": "{}"}}}}}},
			"usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1}})
	}, "examples: true\n")
	postChat(t, url, `{"messages":[]}`, map[string]string{link.HeaderRequest: "A"})
	g.owned.End("A")
	_, out := do(t, "POST", url+"/v1/calls", `{"request_id":"A","tool_calls":[{"call_id":"call_1","tool":"search_kb","arguments":{"query":"x"}}]}`, nil)
	if st := path(out, "results", 0, "status"); st != "success" {
		t.Errorf("a call naming ended request A = %v %v, want it run in a new A", st, path(out, "results", 0, "error"))
	}
}

// TestModelProxyToolCallIDsStayWithTheirOwner: a tool call id another
// tenant's model chose neither links a call to that tenant's request nor
// refuses the call (naming that request): with or without a traceparent,
// the call runs in a request of the caller's own.
func TestModelProxyToolCallIDsStayWithTheirOwner(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant",
			"tool_calls": []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "search_kb", "arguments": "{}"}}}}}},
			"usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1}})
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	alice, _, _ := ks.Create(auth.KeySpec{Principal: "alice", Tenant: "acme"})
	bob, _, _ := ks.Create(auth.KeySpec{Principal: "bob", Tenant: "globex"})
	cfg, err := config.Parse([]byte("examples: true\ndata: "+dir+"\nauth: {keys: true}\nmodel: {base_url: '"+up.URL+"/v1', name: fake}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTest(t, newTestGateway(t, cfg)).URL
	postChat(t, url, `{"messages":[]}`, map[string]string{link.HeaderRequest: "alice-private", "Authorization": "Bearer " + alice})
	for _, h := range []map[string]string{
		{"Authorization": "Bearer " + bob},
		{"Authorization": "Bearer " + bob, "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	} {
		code, out := do(t, "POST", url+"/v1/calls", `{"tool_calls":[{"call_id":"call_1","tool":"search_kb","arguments":{"query":"x"}}]}`, h)
		if code != http.StatusOK || path(out, "request_id") == "alice-private" || strings.Contains(fmt.Sprint(out), "alice-private") {
			t.Errorf("bob's call with alice's model's call id (traceparent %q): %d %v", h["traceparent"], code, out)
		}
	}
}

// TestModelProxyMasksAKeySplitAcrossChunks: a model that spells the key
// across several chunks of a stream, in its text and in a tool call's
// arguments, does not hand it to the client, whose reassembled answer has
// the mask in its place and every other word; a stream that ends with the
// start of the key (no finish_reason) still ends masked.
func TestModelProxyMasksAKeySplitAcrossChunks(t *testing.T) {
	const key = "sk-live-SECRET-9f8e7d"
	chunk := func(delta map[string]any, finish any) string {
		b, _ := json.Marshal(map[string]any{"object": "chat.completion.chunk",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		return "data: " + string(b) + "\n\n"
	}
	for _, tc := range []struct {
		name   string
		events []string
		text   string // the reassembled content
		args   string // the reassembled arguments
	}{
		{"text", []string{chunk(map[string]any{"content": "your key is sk-li"}, nil), chunk(map[string]any{"content": "ve-SEC"}, nil),
			chunk(map[string]any{"content": "RET-9f8e7d, keep it"}, nil), chunk(map[string]any{}, "stop")}, "your key is [REDACTED], keep it", ""},
		{"arguments", []string{chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "c1", "type": "function",
			"function": map[string]any{"name": "search_kb", "arguments": `{"q":"sk-live-`}}}}, nil),
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `SECRET-9f8e7d"}`}}}}, nil),
			chunk(map[string]any{}, "tool_calls")}, "", `{"q":"[REDACTED]"}`},
		{"cut", []string{chunk(map[string]any{"content": "the key: sk-live-SECR"}, nil)}, "the key: [REDACTED]", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for _, e := range tc.events {
					io.WriteString(w, e)
					w.(http.Flusher).Flush()
				}
				if tc.name != "cut" {
					io.WriteString(w, "data: [DONE]\n\n")
				}
			}, "")
			_, b := postChat(t, url, `{"stream":true,"messages":[]}`, nil)
			if bytes.Contains(b, []byte("9f8e7d")) || bytes.Contains(b, []byte("SECRET")) {
				t.Errorf("a part of the key reached the client:\n%s", b)
			}
			var text, args strings.Builder
			for _, line := range strings.Split(string(b), "\n") {
				d, ok := strings.CutPrefix(line, "data: ")
				if !ok || d == "[DONE]" {
					continue
				}
				var c openai.Completion
				if err := json.Unmarshal([]byte(d), &c); err != nil {
					t.Fatalf("a chunk is not JSON: %q", d)
				}
				for _, ch := range c.Choices {
					if ch.Delta != nil {
						text.WriteString(ch.Delta.Content)
						for _, tcall := range ch.Delta.ToolCalls {
							args.WriteString(tcall.Function.Arguments)
						}
					}
				}
			}
			if text.String() != tc.text || args.String() != tc.args {
				t.Errorf("the client reassembled %q and arguments %q, want %q and %q", text.String(), args.String(), tc.text, tc.args)
			}
		})
	}
}

// TestModelProxyMasksAKeySplitInAnyText: the key spelled across chunks is
// masked in every text of a delta (refusal, reasoning, a legacy function
// call's arguments) and in each of two choices; every other word reaches
// the client.
func TestModelProxyMasksAKeySplitInAnyText(t *testing.T) {
	texts := func(field string, choice int, text string) map[string]any {
		delta := map[string]any{field: text}
		if field == "function_call" {
			delta = map[string]any{field: map[string]any{"arguments": text}}
		}
		return map[string]any{"index": choice, "delta": delta}
	}
	var events []string
	for i, part := range []string{"the key sk-live-SEC", "RET-9f8e7d done"} {
		var choices []any
		for _, field := range []string{"refusal", "reasoning_content", "function_call"} {
			for choice := range 2 {
				text := part
				if i == 0 {
					text = fmt.Sprintf("%d:", choice) + part
				}
				choices = append(choices, texts(field, choice, text))
			}
		}
		if i == 1 {
			for _, ch := range choices {
				ch.(map[string]any)["finish_reason"] = "stop"
			}
		}
		b, _ := json.Marshal(map[string]any{"choices": choices})
		events = append(events, "data: "+string(b)+"\n\n")
	}
	_, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}, "")
	_, b := postChat(t, url, `{"stream":true,"messages":[]}`, nil)
	if bytes.Contains(b, []byte("9f8e7d")) {
		t.Errorf("a part of the key reached the client:\n%s", b)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Index int            `json:"index"`
				Delta map[string]any `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("a chunk is not JSON: %q", d)
		}
		for _, ch := range c.Choices {
			for field, v := range ch.Delta {
				if fc, ok := v.(map[string]any); ok {
					v = fc["arguments"]
				}
				got[fmt.Sprint(ch.Index, field)] += fmt.Sprint(v)
			}
		}
	}
	for _, field := range []string{"refusal", "reasoning_content", "function_call"} {
		for choice := range 2 {
			if k, want := fmt.Sprint(choice, field), fmt.Sprintf("%d:the key [REDACTED] done", choice); got[k] != want {
				t.Errorf("choice %d's %s reassembled as %q, want %q", choice, field, got[k], want)
			}
		}
	}
	if len(got) != 6 {
		t.Errorf("the client got texts %v, want 3 fields of 2 choices", got)
	}
}

// TestModelProxyForwardsTraceparent: the model endpoint is told the
// traceparent of the turn's frame, in the request's trace, so that its
// spans join the trace under the turn's CLIENT span.
func TestModelProxyForwardsTraceparent(t *testing.T) {
	fake := &fakeOpenAI{toolName: "search_kb", args: `{"query":"q"}`}
	g, srv := proxyGateway(t, fake, "")
	resp, b := postChat(t, srv.URL, `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	frame, id := resp.Header.Get(link.HeaderFrame), resp.Header.Get(link.HeaderRequest)
	r, ok := g.rt.Lookup(id)
	if !ok || frame == "" {
		t.Fatalf("no request %q or frame %q", id, frame)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	want := "00-" + hex.EncodeToString(func() []byte { tr := r.Trace(); return tr[:] }()) + "-" + frame + "-01"
	if len(fake.parents) != 1 || fake.parents[0] != want {
		t.Errorf("the model endpoint was told traceparent %q, want %q", fake.parents, want)
	}
}

// TestModelProxyPassesRetryAdvice: what the model's endpoint advises a
// client about retrying (x-should-retry, which the OpenAI SDKs obey before
// the status; retry-after-ms and Retry-After) reaches the client with its
// answer, so a client does not retry what the endpoint said not to, nor
// sooner than it asked.
func TestModelProxyPassesRetryAdvice(t *testing.T) {
	_, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Should-Retry", "false")
		w.Header().Set("Retry-After-Ms", "1500")
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}`)
	}, "")
	resp, b := postChat(t, url, `{"messages":[{"role":"user","content":"hi"}]}`, nil)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d %s, want the endpoint's 429", resp.StatusCode, b)
	}
	for k, want := range map[string]string{"X-Should-Retry": "false", "Retry-After-Ms": "1500", "Retry-After": "2"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

// TestModelProxyZeroUsageFloored: an endpoint that reports a usage of 0
// (as some local servers do), or less than the turn's text holds words,
// is charged the words (of the prompt's text, of the answer's text and
// tool arguments), so that a token budget still stops it: before, it was
// charged nothing and ran on under any budget. An endpoint that reports a
// real count (above the words) is charged exactly that.
func TestModelProxyZeroUsageFloored(t *testing.T) {
	const said = 500 // words of each answer
	text := strings.Repeat("word ", said)
	var asked atomic.Int32
	g, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		var body struct {
			Stream   bool `json:"stream"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		if len(body.Messages) > 0 && body.Messages[0].Content == "real" {
			// A real endpoint's count, above the words of the turn.
			io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I help you today?"}}],"usage":{"prompt_tokens":9,"completion_tokens":9,"total_tokens":18}}`)
			return
		}
		switch {
		case r.URL.Path == "/v1/responses":
			fmt.Fprintf(w, `{"id":"resp_z1","object":"response","model":"fake","output":[{"type":"message","id":"msg_z1","role":"assistant","content":[{"type":"output_text","text":%q}]}],"usage":{"input_tokens":0,"output_tokens":0,"total_tokens":0}}`, text)
		case !body.Stream:
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":%q}}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`, text)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			// Each chunk ends mid-word: a word split across two counts once.
			for i := 0; i < len(text); i += 7 {
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", text[i:min(i+7, len(text))])
			}
			fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":0,\"total_tokens\":0}}\n\n")
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}, "budgets:\n  default: {tokens: 1000000}\n  small: {tokens: 1000}\n")
	for range 10 {
		postChat(t, url, `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{link.HeaderRequest: "zero", link.HeaderBudget: "small"})
	}
	if n := asked.Load(); n > 2 {
		t.Errorf("a 1000-token budget let %d streamed answers of %d words reported as 0 tokens through (charged %d tokens)", n, said, requestTokens(t, g, "zero"))
	}
	if got := requestTokens(t, g, "zero"); got < 2*(said+1) {
		t.Errorf("two streamed answers of %d words reported as 0 tokens were charged %d tokens, want at least %d", said, got, 2*(said+1))
	}
	resp, b := postChat(t, url, `{"messages":[{"role":"user","content":"one two three"}]}`, map[string]string{link.HeaderRequest: "whole"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("whole answer: %d %s", resp.StatusCode, b)
	}
	if got := requestTokens(t, g, "whole"); got != said+3 {
		t.Errorf("a whole answer of %d words to a prompt of 3, reported as 0 tokens, was charged %d tokens, want %d", said, got, said+3)
	}
	req, _ := http.NewRequest("POST", url+"/v1/responses", strings.NewReader(`{"input":"one two","instructions":"be brief"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(link.HeaderRequest, "responses")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if got := requestTokens(t, g, "responses"); got != said+4 {
		t.Errorf("a Responses answer of %d words to a prompt of 4, reported as 0 tokens, was charged %d tokens, want %d", said, got, said+4)
	}
	if resp, b := postChat(t, url, `{"messages":[{"role":"user","content":"real"}]}`, map[string]string{link.HeaderRequest: "real"}); resp.StatusCode != http.StatusOK {
		t.Fatalf("the real count: %d %s", resp.StatusCode, b)
	}
	if got := requestTokens(t, g, "real"); got != 18 {
		t.Errorf("an endpoint that reported 9+9 tokens was charged %d, want what it reported (18)", got)
	}
}

// TestNamedBudgetKeepsDefaultBounds: a budget a client names for a request
// it begins lifts only the bounds it writes; the others are the default's.
// Before, a key it left out was unlimited: naming `default`, written as
// {tool_calls: 3}, lifted the bounds on turns, depth and the wall clock
// that requests naming nothing keep, and naming `small` ({tool_calls: 2})
// lifted the default's token bound too.
func TestNamedBudgetKeepsDefaultBounds(t *testing.T) {
	g, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}, "budgets:\n  default: {tool_calls: 3, tokens: 5000}\n  small: {tool_calls: 2}\n  open: {tool_calls: 2, turns: 0, principals: [local]}\n")
	std := reach.StandardBudget()
	for _, tc := range []struct {
		name string
		want reach.Budget
	}{
		{"", reach.Budget{Turns: std.Turns, Depth: std.Depth, ToolCalls: 3, Tokens: 5000, Wall: std.Wall}},
		{"default", reach.Budget{Turns: std.Turns, Depth: std.Depth, ToolCalls: 3, Tokens: 5000, Wall: std.Wall}},
		{"small", reach.Budget{Turns: std.Turns, Depth: std.Depth, ToolCalls: 2, Tokens: 5000, Wall: std.Wall}},
		{"open", reach.Budget{Turns: 0, Depth: std.Depth, ToolCalls: 2, Tokens: 5000, Wall: std.Wall}}, // a written 0 is unlimited
	} {
		id := "named-" + tc.name
		h := map[string]string{link.HeaderRequest: id}
		if tc.name != "" {
			h[link.HeaderBudget] = tc.name
		}
		if resp, b := postChat(t, url, `{"messages":[{"role":"user","content":"hi"}]}`, h); resp.StatusCode != http.StatusOK {
			t.Fatalf("%q: %d %s", tc.name, resp.StatusCode, b)
		}
		r, _ := g.rt.Lookup(id)
		if r == nil {
			t.Fatalf("no request %s", id)
		}
		if got := r.Budget(); got != tc.want {
			t.Errorf("a request naming budget %q has %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
