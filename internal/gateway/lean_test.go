package gateway

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPOverHTTP drives reach's /mcp over Streamable HTTP with the go-sdk
// client: with a session, plain calls are answered by the lean path, calls
// with a progress token and everything else by the SDK; on the sessionless
// protocol by the SDK's stateless handler; all must behave the same.
func TestMCPOverHTTP(t *testing.T) {
	for _, protocol := range []string{mcpwire.StatelessProtocol, mcpwire.SessionProtocol} {
		// As served (fasthttp in front, net/http behind), and by the
		// handler alone on net/http's server (what serves a connection
		// once it was handed over).
		for _, server := range []string{"served", "net/http"} {
			t.Run("protocol="+protocol+"/"+server, func(t *testing.T) { testMCPOverHTTP(t, protocol, server) })
		}
	}
}

func testMCPOverHTTP(t *testing.T, protocol, server string) {
	g, p, srv := upstreamGateway(t, probeConfig)
	if server == "net/http" {
		srv = httptest.NewServer(g.Handler())
		t.Cleanup(srv.Close)
	}
	var progress atomic.Int32
	c := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	})
	ctx := context.Background()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != protocol {
		t.Fatalf("negotiated protocol %s, want %s", got, protocol)
	}
	if (cs.ID() == "") != (protocol == mcpwire.StatelessProtocol) {
		t.Fatalf("session id %q on protocol %s", cs.ID(), protocol)
	}

	r1, text := callText(t, cs, "up__echo", map[string]any{"text": "one"}, nil)
	if r1.IsError || text != "echo: one" {
		t.Errorf("up__echo = %q", text)
	}
	r2, _ := callText(t, cs, "up__add", map[string]any{"a": 1, "b": 2}, nil)
	if sc, _ := r2.StructuredContent.(map[string]any); sc["sum"] != 3.0 {
		t.Errorf("up__add structured = %v", r2.StructuredContent)
	}
	if r1.Meta[link.MetaRequest] != r2.Meta[link.MetaRequest] {
		t.Errorf("one client's calls ran in requests %v and %v", r1.Meta[link.MetaRequest], r2.Meta[link.MetaRequest])
	}
	r3, text := callText(t, cs, "up__delete_all", map[string]any{}, nil)
	if !r3.IsError || !strings.Contains(text, "approval") {
		t.Errorf("up__delete_all = %q, want a refusal", text)
	}
	_, text = callText(t, cs, "nope", map[string]any{}, nil)
	if !strings.Contains(text, "There is no tool named") {
		t.Errorf("unknown tool = %q", text)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "x"},
		Meta: mcp.Meta{link.MetaParent: "bad"}}); err == nil || !strings.Contains(err.Error(), "frame id") {
		t.Errorf("malformed reach/parent: err = %v", err)
	}

	params := &mcp.CallToolParams{Name: "up__ticks", Arguments: map[string]any{"n": 3}}
	params.SetProgressToken("t1")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for progress.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := progress.Load(); n != 3 {
		t.Errorf("%d progress notifications, want 3", n)
	}

	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		cs.CallTool(cctx, &mcp.CallToolParams{Name: "up__slow", Arguments: map[string]any{"text": "s"}})
	})
	waitFor(t, p.started, "the slow call to start")
	cancel()
	waitFor(t, p.cancelled, "the upstream call to be cancelled")
	wg.Wait()

	// The session is still usable after a cancelled call.
	if _, text := callText(t, cs, "up__echo", map[string]any{"text": "after"}, nil); text != "echo: after" {
		t.Errorf("after cancel: %q", text)
	}
	if g.front.FastCalls() == 0 {
		t.Errorf("no call took the lean path")
	}
	fast, _, _ := g.Served()
	if want := server == "served"; (fast > 0) != want { // both protocols
		t.Errorf("%d calls on the server's fast lane; want some: %v", fast, want)
	}
}

// TestLeanUpstreamReconnects: when the upstream forgets the session (a
// restart answers 404), the next call opens a new session and succeeds.
func TestLeanUpstreamReconnects(t *testing.T) {
	g, probe, _ := upstreamGateway(t, probeConfig)
	cs := connectMCP(t, g, nil)
	if _, text := callText(t, cs, "up__echo", map[string]any{"text": "a"}, nil); text != "echo: a" {
		t.Fatalf("first call: %q", text)
	}
	reopened := endUpstreamSessions(probe.server) // the upstream loses the session
	deadline := time.Now().Add(time.Minute)
	for {
		_, text := callText(t, cs, "up__echo", map[string]any{"text": "b"}, nil)
		if text == "echo: b" && reopened() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after the session ended: %q", text)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLeanConnections: lean calls to an HTTP upstream reuse their
// connections, and a connection the upstream closed while idle is not
// used again: the next call dials and succeeds at its first attempt (the
// tool has no retries, so a call on the closed connection would fail).
func TestLeanConnections(t *testing.T) {
	p := newUpstreamProbe()
	up := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, nil))
	var conns atomic.Int32
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	g := newTestGateway(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: up.URL}},
		Tools: map[string]config.ToolOverride{"up__echo": {Retry: &reach.RetryPolicy{Attempts: 1}}}})
	cs := connectMCP(t, g, nil)
	callText(t, cs, "up__echo", map[string]any{"text": "warm"}, nil)
	before := conns.Load()
	for i := range 50 {
		if _, text := callText(t, cs, "up__echo", map[string]any{"text": strconv.Itoa(i)}, nil); text != "echo: "+strconv.Itoa(i) {
			t.Fatalf("call %d: %q", i, text)
		}
	}
	if n := conns.Load() - before; n > 2 {
		t.Errorf("50 sequential calls opened %d connections to the upstream", n)
	}
	up.CloseClientConnections()
	time.Sleep(50 * time.Millisecond) // the close reaches the idle connections
	for i := range 3 {
		if _, text := callText(t, cs, "up__echo", map[string]any{"text": "after " + strconv.Itoa(i)}, nil); text != "echo: after "+strconv.Itoa(i) {
			t.Errorf("call %d after the upstream closed its connections: %q", i, text)
		}
	}
}

// TestLeanResumesClosedStream: an upstream that closes a call's SSE stream
// before it answers (SEP-1699 polling) is asked again with the
// Last-Event-ID, and the call gets its result; the tool, a write without
// retries, ran once per call.
func TestLeanResumesClosedStream(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "polling", Version: "1"}, nil)
	var runs atomic.Int32
	no := false
	type in struct {
		Closes int `json:"closes"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "poll", Description: "Close the stream, then answer.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &no}},
		func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			n := runs.Add(1)
			for range a.Closes {
				req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
				time.Sleep(150 * time.Millisecond)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done " + strconv.Itoa(int(n))}}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}))
	t.Cleanup(up.Close)
	g := newTestGateway(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: up.URL}}})
	cs := connectMCP(t, g, nil)
	calls := []struct {
		closes int
		meta   mcp.Meta
	}{{1, nil}, {2, nil}, {0, nil}, {1, mcp.Meta{"progressToken": "p"}}} // the last with progress
	for i, c := range calls {
		res, text := callText(t, cs, "up__poll", map[string]any{"closes": c.closes}, c.meta)
		if want := "done " + strconv.Itoa(i+1); res.IsError || text != want {
			t.Errorf("call %d (stream closed %d times): %q, want %q", i+1, c.closes, text, want)
		}
	}
	if n := runs.Load(); n != int32(len(calls)) {
		t.Errorf("the tool ran %d times for %d calls", n, len(calls))
	}
}

// TestLeanFollowsRedirect: an upstream whose endpoint redirects (…/mcp to
// …/mcp/, as some servers do) is called through the redirect; nothing runs
// twice.
func TestLeanFollowsRedirect(t *testing.T) {
	p := newUpstreamProbe()
	var echoes atomic.Int32
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp/", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/mcp/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"name":"echo"`)) {
			echoes.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sdk.ServeHTTP(w, r)
	})
	up := httptest.NewServer(mux)
	t.Cleanup(up.Close)
	g := newTestGateway(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: up.URL + "/mcp"}},
		Tools: map[string]config.ToolOverride{"up__echo": {Retry: &reach.RetryPolicy{Attempts: 1}}}})
	cs := connectMCP(t, g, nil)
	for i := range 3 {
		want := "echo: " + strconv.Itoa(i)
		if res, text := callText(t, cs, "up__echo", map[string]any{"text": strconv.Itoa(i)}, nil); res.IsError || text != want {
			t.Errorf("call %d through a redirecting endpoint: %q, want %q", i, text, want)
		}
	}
	if n := echoes.Load(); n != 3 {
		t.Errorf("the upstream ran echo %d times for 3 calls", n)
	}
}
