package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newTestGateway builds a gateway from cfg (nil: the built-in examples)
// and closes it when the test ends.
func newTestGateway(t testing.TB, cfg *config.Config) *Gateway {
	t.Helper()
	if cfg == nil {
		cfg = &config.Config{}
	}
	if cfg.Data == "" {
		cfg.Data = t.TempDir()
	}
	g, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// serveTest serves g on a loopback address as reach serve does (Serve:
// fasthttp in front, net/http behind); the httptest server gives its URL
// and its Close, which shuts Serve down and waits for it.
func serveTest(t testing.TB, g *Gateway) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(g.Handler())
	ln := srv.Listener
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln) }()
	var once sync.Once
	srv.Listener = closeFunc{ln, func() error {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("Serve: %v", err)
			}
		})
		return nil
	}}
	srv.URL = "http://" + ln.Addr().String()
	t.Cleanup(srv.Close)
	return srv
}

// closeFunc is a listener whose Close is close.
type closeFunc struct {
	net.Listener
	close func() error
}

func (l closeFunc) Close() error { return l.close() }

// do sends a request and decodes a JSON answer into a map.
func do(t testing.TB, method, url, body string, header map[string]string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s %s: answer %d is not a JSON object: %q", method, url, resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

// path digs into decoded JSON: path(v, "results", 0, "status").
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// upstreamProbe is a Go MCP server used as an upstream in tests; it records
// what reach sends it.
type upstreamProbe struct {
	server    *mcp.Server
	started   chan string // a slow call began
	cancelled chan string // a slow call saw its context end
	mu        sync.Mutex
	metas     []mcp.Meta // _meta of every call
	gateway   string     // the gateway's base URL, for callback
	hops      []string   // the gateways hop calls, in turn
	hopped    int
}

func (p *upstreamProbe) lastMeta() mcp.Meta {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.metas) == 0 {
		return nil
	}
	return p.metas[len(p.metas)-1]
}

func (p *upstreamProbe) record(m mcp.Meta) {
	p.mu.Lock()
	p.metas = append(p.metas, m)
	p.mu.Unlock()
}

func newUpstreamProbe() *upstreamProbe {
	p := &upstreamProbe{started: make(chan string, 16), cancelled: make(chan string, 16)}
	s := mcp.NewServer(&mcp.Implementation{Name: "probe", Version: "1"}, nil)
	yes, no := true, false
	type textIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			p.record(req.Params.Meta)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Wait until cancelled (10s at most).", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			p.record(req.Params.Meta)
			p.started <- in.Text
			select {
			case <-ctx.Done():
				p.cancelled <- in.Text
				return nil, nil, ctx.Err()
			case <-time.After(10 * time.Second):
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "delete_all", Description: "Delete everything.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			p.record(req.Params.Meta)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted"}}}, nil, nil
		})
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	type addOut struct {
		Sum int `json:"sum"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			p.record(req.Params.Meta)
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &no}},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			p.record(req.Params.Meta)
			return nil, nil, fmt.Errorf("the disk is full")
		})
	type ticksIn struct {
		N   int `json:"n"`
		Pad int `json:"pad,omitempty"` // bytes of message in each progress notification
	}
	// ticks reports progress (when asked) and logs a message n times, the
	// last right before its result, with no pause between them.
	mcp.AddTool(s, &mcp.Tool{Name: "ticks", Description: "Report progress and log n times.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in ticksIn) (*mcp.CallToolResult, any, error) {
			p.record(req.Params.Meta)
			tok := req.Params.GetProgressToken()
			for i := range in.N {
				if tok != nil {
					req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1), Total: float64(in.N),
						Message: strings.Repeat("x", in.Pad)})
				}
				req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "probe", Data: fmt.Sprintf("tick %d", i+1)})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ticked"}}}, nil, nil
		})
	// sample_detached asks for a completion outside the call's stream (a
	// context not the call's: the session's standalone stream), as servers
	// that do not relate their requests do.
	mcp.AddTool(s, &mcp.Tool{Name: "sample_detached", Description: "Sample on the standalone stream.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := req.Session.CreateMessage(sctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil, nil
			}
			text := ""
			if tc, ok := res.Content.(*mcp.TextContent); ok {
				text = tc.Text
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled: " + text}}}, nil, nil
		})
	// chatty logs "<tag>-1", waits ms milliseconds, logs "<tag>-2".
	mcp.AddTool(s, &mcp.Tool{Name: "chatty", Description: "Log twice, a while apart.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Tag string `json:"tag"`
			Ms  int    `json:"ms"`
		}) (*mcp.CallToolResult, any, error) {
			req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: in.Tag + "-1"})
			time.Sleep(time.Duration(in.Ms) * time.Millisecond)
			req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: in.Tag + "-2"})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done " + in.Tag}}}, nil, nil
		})
	// callback calls back into the gateway's API as a tool's implementation
	// in another process would: it forwards its reach/parent so that its
	// call nests under its own frame.
	mcp.AddTool(s, &mcp.Tool{Name: "callback", Description: "Call a tool back through the gateway.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Tool string         `json:"tool"`
			Args map[string]any `json:"args"`
		}) (*mcp.CallToolResult, any, error) {
			p.record(req.Params.Meta)
			return callBack(ctx, p.gateway, req, map[string]any{"call_id": "cb", "tool": in.Tool, "arguments": in.Args})
		})
	// hop calls the same tool with the same arguments back through the
	// next gateway of hops (in turn), under its own frame (traceparent):
	// a cycle through the gateways, which one of them refuses.
	mcp.AddTool(s, &mcp.Tool{Name: "hop", Description: "Hop to the next gateway.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			N string `json:"n"`
		}) (*mcp.CallToolResult, any, error) {
			p.record(req.Params.Meta)
			p.mu.Lock()
			if len(p.hops) == 0 || p.hopped >= 4 {
				p.mu.Unlock()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no more hops"}}}, nil, nil
			}
			next := p.hops[p.hopped%len(p.hops)]
			p.hopped++
			p.mu.Unlock()
			return callBack(ctx, next, req, map[string]any{"call_id": "hop", "tool": "up__hop", "arguments": in})
		})
	p.server = s
	return p
}

// callBack makes call through the gateway at base (POST /v1/calls) under
// the frame of the tool call req (its traceparent), and answers with the
// gateway's answer as text.
func callBack(ctx context.Context, base string, req *mcp.CallToolRequest, call map[string]any) (*mcp.CallToolResult, any, error) {
	body, _ := json.Marshal(map[string]any{"tool_calls": []any{call}})
	hreq, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/calls", bytes.NewReader(body))
	if tp, ok := req.Params.Meta[link.MetaTraceparent].(string); ok {
		hreq.Header.Set("traceparent", tp)
	}
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}, nil, nil
}

// serveUpstream serves the probe over Streamable HTTP on loopback.
func serveUpstream(t testing.TB, p *upstreamProbe) *httptest.Server {
	t.Helper()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server },
		&mcp.StreamableHTTPOptions{PropagateRequestCancellation: true})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// connectMCP connects an in-memory MCP client to g.
func connectMCP(t testing.TB, g *Gateway, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := g.MCPServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callText calls a tool over MCP and returns the result's first text.
func callText(t testing.TB, cs *mcp.ClientSession, name string, args any, meta mcp.Meta) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	if len(res.Content) == 0 {
		return res, ""
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("CallTool(%s): content is %T, want text", name, res.Content[0])
	}
	return res, tc.Text
}

// dotID is how the DOT renderer names a frame's node.
func dotID(id reach.FrameID) string { return `"f` + id.String() + `"` }

// endUpstreamSessions ends every session of an upstream's server, as a
// restart does: the gateway's next request on its session is answered 404.
// The returned func reports whether the server has a session again.
func endUpstreamSessions(s *mcp.Server) (reopened func() bool) {
	ended := map[*mcp.ServerSession]bool{}
	for ss := range s.Sessions() {
		ss.Close()
		ended[ss] = true
	}
	return func() bool {
		for ss := range s.Sessions() {
			if !ended[ss] {
				return true
			}
		}
		return false
	}
}

// contentText joins the text contents of a tool result.
func contentText(cs []mcp.Content) string {
	var b strings.Builder
	for i, c := range cs {
		if t, ok := c.(*mcp.TextContent); ok {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// clip cuts s to at most n bytes, for a test's message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// waitingCall serves a gateway with a tool "wait" that runs until its
// call is cancelled, and starts a call of it in request "long": it returns
// once the tool runs, with the channel of the call's answer.
func waitingCall(t *testing.T) (*Gateway, *httptest.Server, <-chan map[string]any) {
	t.Helper()
	g := newTestGateway(t, nil)
	started := make(chan struct{})
	g.rt.MustRegister(g.prepare(reach.Tool{Name: "wait", Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}}))
	srv := serveTest(t, g)
	done := make(chan map[string]any, 1)
	go func() {
		_, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"long","tool_calls":[{"call_id":"w","tool":"wait","arguments":{}}]}`, nil)
		done <- out
	}()
	<-started
	return g, srv, done
}
