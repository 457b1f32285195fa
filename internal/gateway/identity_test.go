package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Which request a framework's calls belong to, when the framework sends
// nothing of reach's: sessionless clients, model turns and the tool calls
// they chose.

// gateUpstream is an MCP upstream with three read tools: lookup (returns
// "found <q>"), gate (holds each call until n calls are in flight at
// once, then returns "opened") and wait (returns when ctx ends or after
// 10 s).
type gateUpstream struct {
	mu      sync.Mutex
	waiting int
	n       int
	open    chan struct{}
	started chan struct{}
}

func newGateUpstream(t *testing.T, n int) string {
	t.Helper()
	g := &gateUpstream{n: n, open: make(chan struct{}), started: make(chan struct{}, 16)}
	s := mcp.NewServer(&mcp.Implementation{Name: "gate", Version: "1"}, nil)
	read := &mcp.ToolAnnotations{ReadOnlyHint: true}
	type qIn struct {
		Q string `json:"q"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look q up.", Annotations: read},
		func(_ context.Context, _ *mcp.CallToolRequest, in qIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found " + in.Q}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "gate", Description: "Wait for the others.", Annotations: read},
		func(ctx context.Context, _ *mcp.CallToolRequest, in qIn) (*mcp.CallToolResult, any, error) {
			g.mu.Lock()
			g.waiting++
			if g.waiting == g.n {
				close(g.open)
			}
			open := g.open
			g.mu.Unlock()
			select {
			case <-open:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(30 * time.Second):
				return nil, nil, fmt.Errorf("the others never came")
			}
			g.mu.Lock()
			if g.waiting--; g.waiting == 0 { // the last one out makes a new gate
				g.open = make(chan struct{})
			}
			g.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "opened"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "wait", Description: "Wait until cancelled.", Annotations: read},
		func(ctx context.Context, _ *mcp.CallToolRequest, in qIn) (*mcp.CallToolResult, any, error) {
			g.started <- struct{}{}
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(10 * time.Second):
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "waited"}}}, nil, nil
			}
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{PropagateRequestCancellation: true}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// slClient is a sessionless (2026-07-28) MCP client of one name, posting
// raw tools/call requests.
type slClient struct {
	url, name string
	header    http.Header
}

// slResult is what a test reads of a tools/call answer.
type slResult struct {
	IsError bool
	Text    string
	Request string
	Frame   string
	Status  string
}

func (c *slClient) call(t *testing.T, tool string, args map[string]any) slResult {
	t.Helper()
	return c.callMeta(t, tool, args, nil)
}

// callMeta calls tool with more _meta (a progress token sends the call
// through the SDK).
func (c *slClient) callMeta(t *testing.T, tool string, args, more map[string]any) slResult {
	t.Helper()
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    mcpwire.StatelessProtocol,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": c.name, "version": "1.0.0"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	for k, v := range more {
		meta[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": tool, "arguments": args, "_meta": meta}})
	req, _ := http.NewRequest(http.MethodPost, c.url+"/mcp", strings.NewReader(string(body)))
	for k, v := range c.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcpwire.HeaderProtocol, mcpwire.StatelessProtocol)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return slResult{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") { // the SDK's answer: the last data line
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if d, ok := strings.CutPrefix(lines[i], "data:"); ok && strings.Contains(d, `"result"`) {
				b = []byte(d)
				break
			}
		}
	}
	return readCallResult(t, b)
}

func readCallResult(t *testing.T, b []byte) slResult {
	t.Helper()
	var env struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			Meta map[string]any `json:"_meta"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Result.Meta == nil {
		t.Errorf("not a tools/call result: %s", b)
		return slResult{}
	}
	r := slResult{IsError: env.Result.IsError}
	if len(env.Result.Content) > 0 {
		r.Text = env.Result.Content[0].Text
	}
	r.Request, _ = env.Result.Meta[link.MetaRequest].(string)
	r.Frame, _ = env.Result.Meta[link.MetaFrame].(string)
	r.Status, _ = env.Result.Meta[link.MetaStatus].(string)
	return r
}

// toolChoosingModel is an OpenAI-compatible model for linking tests: to a
// conversation whose last message is the user's ("TOOL ARGS"), it answers
// with a call of TOOL with the JSON ARGS under a new random id; after a
// tool's answer it says "done".
func toolChoosingModel(t *testing.T) string { return recordingModel(t, nil) }

// recordingModel is toolChoosingModel, sending each request's body to seen
// (if not nil).
func recordingModel(t *testing.T, seen chan<- []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if seen != nil {
			seen <- raw
		}
		r.Body = io.NopCloser(strings.NewReader(string(raw)))
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		msg := map[string]any{"role": "assistant", "content": "done"}
		finish := "stop"
		if n := len(body.Messages); n > 0 && body.Messages[n-1].Role == "user" {
			tool, args, _ := strings.Cut(body.Messages[n-1].Content, " ")
			var id [6]byte
			rand.Read(id[:])
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_" + hex.EncodeToString(id[:]), "type": "function", "function": map[string]any{"name": tool, "arguments": args}}}}
			finish = "tool_calls"
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// linkGateway serves a gateway in front of a gate upstream (n for its
// gate) and the scripted model, with extra YAML.
func linkGateway(t *testing.T, n int, extra string) (*Gateway, string) {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf("upstreams:\n  - name: up\n    url: %s\nmodel: {base_url: '%s/v1', name: scripted}\n%s",
		newGateUpstream(t, n), toolChoosingModel(t), extra)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	return g, serveTest(t, g).URL
}

// chat posts a chat request: the user asks for "TOOL ARGS", and, when
// prior is set, the conversation goes on after that turn's tool call and
// its answer.
func chat(t *testing.T, url, ask string, prior map[string]any, h map[string]string) (*http.Response, map[string]any) {
	t.Helper()
	msgs := []any{map[string]any{"role": "user", "content": ask}}
	if prior != nil {
		tc := path(prior, "choices", 0, "message", "tool_calls", 0).(map[string]any)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{tc}},
			map[string]any{"role": "tool", "tool_call_id": tc["id"], "content": "found"})
	}
	body, _ := json.Marshal(map[string]any{"model": "scripted", "messages": msgs})
	resp, b := postChat(t, url, string(body), h)
	var out map[string]any
	json.Unmarshal(b, &out)
	return resp, out
}

// TestSessionlessAgentLoopIsCaught: a sessionless client that calls one
// tool after another, sending nothing of reach's, works in one request,
// so its loop is refused; the refusal addresses the agent neutrally, not
// by its client library's name.
func TestSessionlessAgentLoopIsCaught(t *testing.T) {
	_, url := linkGateway(t, 1, "")
	c := &slClient{url: url, name: "@acme/agent-kit"}
	var res []slResult
	for range 4 {
		res = append(res, c.call(t, "up__lookup", map[string]any{"q": "refund policy"}))
	}
	if res[0].IsError || res[1].IsError || res[0].Request != res[1].Request || res[1].Request != res[2].Request {
		t.Fatalf("one agent's calls = %+v, want one request", res)
	}
	if !res[2].IsError && !res[3].IsError {
		t.Fatalf("a loop of identical calls was not refused: %+v", res)
	}
	refusal := res[2]
	if !refusal.IsError {
		refusal = res[3]
	}
	if refusal.Status != "refused" || strings.Contains(refusal.Text, "acme") || strings.Contains(refusal.Text, "agent-kit") {
		t.Errorf("refusal %q (%s), want one that does not name the client library", refusal.Text, refusal.Status)
	}
}

// TestSessionlessStoppedRequestDoesNotCaptureTheNextRun: once a
// sessionless client's request is stopped, its next call begins a new
// request instead of being refused.
func TestSessionlessStoppedRequestDoesNotCaptureTheNextRun(t *testing.T) {
	g, url := linkGateway(t, 1, "")
	c := &slClient{url: url, name: "app"}
	first := c.call(t, "up__lookup", map[string]any{"q": "a"})
	if first.IsError || first.Request == "" {
		t.Fatalf("first call: %+v", first)
	}
	if code, b := do(t, "POST", url+"/v1/requests/"+first.Request+"/cancel", `{"mode":"cancel","reason":"user stop"}`, nil); code != 200 {
		t.Fatalf("cancel: %d %v", code, b)
	}
	next := c.call(t, "up__lookup", map[string]any{"q": "b"})
	if next.IsError || next.Request == first.Request {
		t.Errorf("the next run = %+v, want a new request that runs (the stopped one is %s)", next, first.Request)
	}
	if r, _ := g.rt.Lookup(first.Request); r == nil || !r.State().Stopped() {
		t.Errorf("request %s is not stopped", first.Request)
	}
}

// TestSessionlessConcurrentClientsAreNotOneAgent: 64 clients of one app
// (the same clientInfo, no session, nothing of reach's) make the same call
// at the same time, three rounds: no call is refused as a repeat, since
// calls in flight together are not one agent's loop.
func TestSessionlessConcurrentClientsAreNotOneAgent(t *testing.T) {
	const clients = 64
	_, url := linkGateway(t, clients, "")
	refused := 0
	for round := range 3 {
		var wg sync.WaitGroup
		res := make([]slResult, clients)
		for i := range clients {
			wg.Go(func() {
				res[i] = (&slClient{url: url, name: "load-generator"}).call(t, "up__gate", map[string]any{"q": "same"})
			})
		}
		wg.Wait()
		for i, r := range res {
			if r.IsError {
				refused++
				t.Errorf("round %d, client %d: %s", round, i, r.Text)
			}
		}
	}
	if refused > 0 {
		t.Errorf("%d of %d coincident calls were refused", refused, 3*clients)
	}
}

// TestSessionlessTracesAreRuns: two runs of one sessionless app that send
// their own traceparent (another tracer's) work in a request each, even
// when their calls alternate.
func TestSessionlessTracesAreRuns(t *testing.T) {
	_, url := linkGateway(t, 1, "")
	runs := []*slClient{
		{url: url, name: "app", header: http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}},
		{url: url, name: "app", header: http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}},
	}
	reqs := [2]map[string]bool{{}, {}}
	for i := range 6 {
		r := runs[i%2].call(t, "up__lookup", map[string]any{"q": fmt.Sprint("step ", i)})
		if r.IsError {
			t.Fatalf("call %d: %s", i, r.Text)
		}
		reqs[i%2][r.Request] = true
	}
	if len(reqs[0]) != 1 || len(reqs[1]) != 1 || fmt.Sprint(reqs[0]) == fmt.Sprint(reqs[1]) {
		t.Errorf("requests of the two traces = %v and %v, want one each, not the same", reqs[0], reqs[1])
	}
}

// TestModelTurnLinksTheToolCallsItChose: a model turn through the proxy and
// the MCP call that runs the tool call it chose — from a client that sends
// nothing of reach's, with a session or without — are one request, the
// call under the turn; the next turn, whose history holds that call, joins
// them; the request's budget (named with Reach-Budget) covers the calls.
func TestModelTurnLinksTheToolCallsItChose(t *testing.T) {
	g, url := linkGateway(t, 1, "budgets:\n  three: {tool_calls: 3}\n")
	for _, sessionless := range []bool{false, true} {
		t.Run(fmt.Sprint("sessionless=", sessionless), func(t *testing.T) {
			q := fmt.Sprintf("order %v", sessionless)
			args := map[string]any{"q": q}
			ask := `up__lookup {"q":"` + q + `"}`
			resp, turn := chat(t, url, ask, nil, map[string]string{link.HeaderBudget: "three"})
			if resp.StatusCode != 200 {
				t.Fatalf("chat: %d %v", resp.StatusCode, turn)
			}
			reqID, frame := resp.Header.Get(link.HeaderRequest), resp.Header.Get(link.HeaderFrame)
			var got slResult
			if sessionless {
				got = (&slClient{url: url, name: "ai-sdk-mcp-client"}).call(t, "up__lookup", args)
			} else {
				cs := connectMCP(t, g, nil)
				res, text := callText(t, cs, "up__lookup", args, nil)
				got = slResult{IsError: res.IsError, Text: text}
				got.Request, _ = res.Meta[link.MetaRequest].(string)
				got.Frame, _ = res.Meta[link.MetaFrame].(string)
			}
			if got.IsError || got.Request != reqID {
				t.Fatalf("the tool call = %+v, want it in the turn's request %s", got, reqID)
			}
			r, _ := g.rt.Lookup(reqID)
			if r.Budget().ToolCalls != 3 {
				t.Errorf("the request's budget = %+v, want the named budget three", r.Budget())
			}
			id, _ := reach.ParseFrameID(got.Frame)
			if f, ok := r.Frame(id); !ok || f.Parent == nil || f.Parent.ID.String() != frame {
				t.Errorf("the tool call's frame %s is not under the model turn %s", got.Frame, frame)
			}
			resp2, _ := chat(t, url, ask, turn, nil)
			if resp2.StatusCode != 200 || resp2.Header.Get(link.HeaderRequest) != reqID {
				t.Errorf("the next turn: %d in request %q, want request %s", resp2.StatusCode, resp2.Header.Get(link.HeaderRequest), reqID)
			}
		})
	}
}

// TestModelTurnLinkingIsConservative: two runs whose models chose the very
// same call (the same tool and arguments) at the same time: the MCP calls
// that run it, which say nothing of which run they belong to, are linked
// to neither run (never to the other's); two runs that chose different
// calls each get theirs.
func TestModelTurnLinkingIsConservative(t *testing.T) {
	_, url := linkGateway(t, 1, "")
	respA, _ := chat(t, url, `up__lookup {"q":"same"}`, nil, nil)
	respB, _ := chat(t, url, `up__lookup {"q":"same"}`, nil, nil)
	a, b := respA.Header.Get(link.HeaderRequest), respB.Header.Get(link.HeaderRequest)
	if a == "" || a == b {
		t.Fatalf("two runs' first turns are in requests %q and %q, want two", a, b)
	}
	for i := range 2 {
		got := (&slClient{url: url, name: "app"}).call(t, "up__lookup", map[string]any{"q": "same"})
		if got.Request == a || got.Request == b {
			t.Errorf("call %d of an ambiguous choice was linked to run %s (runs %s, %s)", i, got.Request, a, b)
		}
	}
	respC, _ := chat(t, url, `up__lookup {"q":"mine"}`, nil, nil)
	respD, _ := chat(t, url, `up__lookup {"q":"yours"}`, nil, nil)
	for q, want := range map[string]string{"yours": respD.Header.Get(link.HeaderRequest), "mine": respC.Header.Get(link.HeaderRequest)} {
		if got := (&slClient{url: url, name: "app"}).call(t, "up__lookup", map[string]any{"q": q}); got.Request != want {
			t.Errorf("the call of %q is in request %s, want its run's %s", q, got.Request, want)
		}
	}
}

// TestModelTurnLinkingRunAgain: an agent run again with the same question
// soon after the first run (whose request only idle_gap ends) chooses the
// same call; the first run had its call, so the second run's call is its
// own turn's, not ambiguous. It was linked to neither, and a sessionless
// client's call then continued the client's running request: the first
// run's, its turns in one request and its tool calls in another.
func TestModelTurnLinkingRunAgain(t *testing.T) {
	_, url := linkGateway(t, 1, "")
	for run := range 2 {
		resp, _ := chat(t, url, `up__lookup {"q":"where is 1001"}`, nil, nil)
		want := resp.Header.Get(link.HeaderRequest)
		if got := (&slClient{url: url, name: "app"}).call(t, "up__lookup", map[string]any{"q": "where is 1001"}); got.Request != want {
			t.Errorf("run %d: its tool call is in request %s, want its turn's %s", run+1, got.Request, want)
		}
	}
}

// TestModelTurnStopReachesItsToolCalls: stopping the request a model turn
// began stops the tool call it chose, in flight, and refuses the run's
// next turn so that no client retries it.
func TestModelTurnStopReachesItsToolCalls(t *testing.T) {
	_, url := linkGateway(t, 1, "")
	resp, turn := chat(t, url, `up__wait {"q":"long"}`, nil, nil)
	reqID := resp.Header.Get(link.HeaderRequest)
	done := make(chan slResult, 1)
	go func() { done <- (&slClient{url: url, name: "app"}).call(t, "up__wait", map[string]any{"q": "long"}) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		code, body := do(t, "GET", url+"/v1/requests/"+reqID, "", nil)
		if code == 200 && strings.Contains(fmt.Sprint(body), "up__wait") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tool call never reached request %s: %v", reqID, body)
		}
	}
	do(t, "POST", url+"/v1/requests/"+reqID+"/cancel", `{"mode":"cancel","reason":"user stop"}`, nil)
	got := <-done
	if !got.IsError || got.Request != reqID || got.Status != string(reach.StatusCancelled) {
		t.Errorf("the tool call in flight = %+v, want it cancelled in %s", got, reqID)
	}
	resp2, out := chat(t, url, `up__wait {"q":"long"}`, turn, nil)
	if resp2.StatusCode != http.StatusForbidden || resp2.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("the run's next turn: %d %v, want 403 not to be retried", resp2.StatusCode, out)
	}
}

// headerTransport adds headers to every request.
type headerTransport struct{ h http.Header }

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPHeadersNameTheRequest: a client that cannot send _meta names its
// request with the baggage or Reach-Request header on /mcp (and its
// budget with Reach-Budget), with a session and without, on the fast path
// and through the SDK (a call with a progress token).
func TestMCPHeadersNameTheRequest(t *testing.T) {
	g, url := linkGateway(t, 1, "budgets:\n  two: {tool_calls: 2}\n")
	for _, header := range []string{"baggage", "reach-request"} {
		for _, sessionless := range []bool{false, true} {
			for _, sdk := range []bool{false, true} {
				name := fmt.Sprintf("%s/sessionless=%v/sdk=%v", header, sessionless, sdk)
				t.Run(name, func(t *testing.T) {
					id := strings.NewReplacer("/", "-", "=", "-").Replace(name)
					h := http.Header{"Reach-Budget": {"two"}}
					if header == "baggage" {
						h.Set("Baggage", "other=1, reach.request="+id)
					} else {
						h.Set(link.HeaderRequest, id)
					}
					var meta map[string]any
					if sdk {
						meta = map[string]any{"progressToken": "p1"}
					}
					var got slResult
					if sessionless {
						c := &slClient{url: url, name: "app", header: h}
						got = c.callMeta(t, "up__lookup", map[string]any{"q": name}, meta)
					} else {
						c := mcp.NewClient(&mcp.Implementation{Name: "app", Version: "1"}, nil)
						cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp",
							HTTPClient: &http.Client{Transport: headerTransport{h}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
						if err != nil {
							t.Fatal(err)
						}
						defer cs.Close()
						res, text := callText(t, cs, "up__lookup", map[string]any{"q": name}, meta)
						got = slResult{IsError: res.IsError, Text: text}
						got.Request, _ = res.Meta[link.MetaRequest].(string)
					}
					if got.IsError || got.Request != id {
						t.Fatalf("the call = %+v, want it in request %s", got, id)
					}
					if r, _ := g.rt.Lookup(id); r == nil || r.Budget().ToolCalls != 2 {
						t.Errorf("request %s: budget %+v, want the named budget two", id, r.Budget())
					}
				})
			}
		}
	}
}

// TestModelProxyFoldsHistory: with model.context, a conversation past
// fold_after_turns turns has its older tool results replaced by their
// one-line summaries (reach's, of the calls it ran), the last keep_last
// turns whole; a system note says what was folded and how to get it back,
// and the turn's audit event records it.
func TestModelProxyFoldsHistory(t *testing.T) {
	seen := make(chan []byte, 16)
	cfg, err := config.Parse([]byte(fmt.Sprintf("upstreams:\n  - name: up\n    url: %s\nmodel: {base_url: '%s/v1', name: scripted, context: {fold_after_turns: 2, keep_last: 1}}\n",
		newGateUpstream(t, 1), recordingModel(t, seen))), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	url := serveTest(t, g).URL
	c := &slClient{url: url, name: "app"}
	var msgs []any
	var ids []string
	var reqID string
	for k := range 3 {
		q := fmt.Sprintf("topic %d %s", k, strings.Repeat("detail ", 60))
		msgs = append(msgs, map[string]any{"role": "user", "content": `up__lookup {"q":"` + q + `"}`})
		body, _ := json.Marshal(map[string]any{"model": "scripted", "messages": msgs})
		resp, b := postChat(t, url, string(body), nil)
		<-seen
		var out map[string]any
		json.Unmarshal(b, &out)
		tc := path(out, "choices", 0, "message", "tool_calls", 0).(map[string]any)
		reqID = resp.Header.Get(link.HeaderRequest)
		got := c.call(t, "up__lookup", map[string]any{"q": q})
		if got.IsError || got.Request != reqID {
			t.Fatalf("round %d: %+v, want it in %s", k, got, reqID)
		}
		ids = append(ids, tc["id"].(string))
		msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{tc}},
			map[string]any{"role": "tool", "tool_call_id": tc["id"], "content": got.Text})
	}
	body, _ := json.Marshal(map[string]any{"model": "scripted", "messages": msgs})
	if resp, b := postChat(t, url, string(body), nil); resp.StatusCode != 200 || resp.Header.Get(link.HeaderRequest) != reqID {
		t.Fatalf("the fourth turn: %d %s (request %s, want %s)", resp.StatusCode, b, resp.Header.Get(link.HeaderRequest), reqID)
	}
	var sent struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	json.Unmarshal(<-seen, &sent)
	r, _ := g.rt.Lookup(reqID)
	summary := map[string]string{}
	for _, f := range r.Frames() {
		if f.Kind == reach.ToolFrame {
			summary[f.CallID] = f.Summary()
		}
	}
	note := ""
	for _, m := range sent.Messages {
		switch {
		case m.Role == "tool" && m.ToolCallID == ids[2]:
			if strings.HasPrefix(m.Content, "[folded") || !strings.Contains(m.Content, "detail detail") {
				t.Errorf("the last turn's result was folded: %q", m.Content)
			}
		case m.Role == "tool":
			if want := "[folded by Agent-Reach] " + summary[m.ToolCallID]; m.Content != want || summary[m.ToolCallID] == "" {
				t.Errorf("tool result %s = %q, want %q", m.ToolCallID, m.Content, want)
			}
		case m.Role == "system":
			note = m.Content
		}
	}
	if !strings.Contains(note, ids[0]) || !strings.Contains(note, ids[1]) || strings.Contains(note, ids[2]) || !strings.Contains(note, "call its tool again") {
		t.Errorf("the system note %q, want it to name %s and %s and say how to get them back", note, ids[0], ids[1])
	}
	_, audit := do(t, "GET", url+"/v1/audit?request="+reqID, "", nil)
	if !strings.Contains(fmt.Sprint(audit), "folded 2 tool results") || !strings.Contains(fmt.Sprint(audit), ids[0]) {
		t.Errorf("the audit log lacks what was folded: %v", clip(fmt.Sprint(audit), 2000))
	}
}
