package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/idempotency"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain lets the test binary act as a stdio upstream: with
// REACH_TEST_STDIO_UPSTREAM=1 it serves the probe on stdin and stdout, with
// REACH_BENCH_ROLE a party of the multi-process benchmarks.
func TestMain(m *testing.M) {
	if role := os.Getenv(benchRoleEnv); role != "" {
		if err := runBenchRole(role); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("REACH_TEST_STDIO_UPSTREAM") == "1" {
		p := newUpstreamProbe()
		if err := p.server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(pgtest.Main(m)) // the throwaway PostgreSQL of the instances tests, stopped after
}

// upstreamGateway serves a probe over HTTP and a gateway in front of it.
func upstreamGateway(t *testing.T, cfgYAML string) (*Gateway, *upstreamProbe, *httptest.Server) {
	t.Helper()
	p := newUpstreamProbe()
	up := serveUpstream(t, p)
	cfg, err := config.Parse([]byte(strings.ReplaceAll(cfgYAML, "UPSTREAM_URL", up.URL)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	p.gateway = srv.URL
	return g, p, srv
}

const probeConfig = "upstreams:\n  - name: up\n    url: UPSTREAM_URL\n"

func TestUpstreamToolsAndAccess(t *testing.T) {
	g, _, _ := upstreamGateway(t, probeConfig+"tools:\n  up__fail: {access: read, description: 'Fails, always.'}\n")
	want := map[string]reach.Access{
		"up__echo": reach.Read, "up__slow": reach.Read, "up__add": reach.Read, "up__ticks": reach.Read, "up__callback": reach.Read,
		"up__chatty": reach.Read, "up__sample_detached": reach.Read, "up__hop": reach.Read,
		"up__delete_all": reach.HighRisk, // destructiveHint
		"up__fail":       reach.Read,     // destructiveHint false is a write, overridden to read
	}
	tools := g.rt.Tools()
	if len(tools) != len(want) {
		t.Errorf("%d tools, want %d (no built-in examples when upstreams are configured)", len(tools), len(want))
	}
	for _, tl := range tools {
		if a, ok := want[tl.Name]; !ok || tl.Access != a {
			t.Errorf("%s: access %q, want %q", tl.Name, tl.Access, a)
		}
	}
	if tl, _ := g.rt.Tool("up__fail"); tl.Description != "Fails, always." {
		t.Errorf("description override not applied: %q", tl.Description)
	}
	if ups := g.Upstreams(); len(ups) != 1 || !ups[0].Connected || ups[0].Tools != len(want) || ups[0].Transport != "http" {
		t.Errorf("upstream status = %+v", ups)
	}
}

func TestUpstreamCallsThroughMCP(t *testing.T) {
	g, p, _ := upstreamGateway(t, probeConfig)
	cs := connectMCP(t, g, nil)

	res, text := callText(t, cs, "up__echo", map[string]any{"text": "hi"}, nil)
	if res.IsError || text != "echo: hi" {
		t.Fatalf("up__echo = %q (isError %v)", text, res.IsError)
	}
	// The upstream got the call's frame and request in _meta.
	m := p.lastMeta()
	frame := res.Meta[link.MetaFrame].(string)
	if m[link.MetaParent] != frame || m[link.MetaRequest] != res.Meta[link.MetaRequest] {
		t.Errorf("upstream _meta = %v, want reach/parent %s and the request", m, frame)
	}
	if tp, _ := m[link.MetaTraceparent].(string); !strings.Contains(tp, "-"+frame+"-") {
		t.Errorf("traceparent %q does not carry the frame %s", tp, frame)
	}

	res, _ = callText(t, cs, "up__add", map[string]any{"a": 2, "b": 3}, nil)
	if sc, _ := res.StructuredContent.(map[string]any); res.IsError || sc["sum"] != 5.0 {
		t.Errorf("up__add structured = %v", res.StructuredContent)
	}

	before := len(p.metas)
	res, text = callText(t, cs, "up__delete_all", map[string]any{}, nil)
	if !res.IsError || !strings.Contains(text, "approval") {
		t.Errorf("up__delete_all = %q, want a refusal that needs approval", text)
	}
	if len(p.metas) != before {
		t.Errorf("the refused call reached the upstream")
	}

	res, text = callText(t, cs, "up__fail", map[string]any{}, nil)
	if !res.IsError || !strings.Contains(text, "the disk is full") {
		t.Errorf("up__fail = %q, want the upstream's failure", text)
	}
	// Arguments are validated by reach against the upstream's schema before the call.
	before = len(p.metas)
	res, text = callText(t, cs, "up__add", map[string]any{"a": "two"}, nil)
	if !res.IsError || !strings.Contains(text, "/a") || len(p.metas) != before {
		t.Errorf("invalid arguments: %q, reached upstream: %v", text, len(p.metas) != before)
	}
}

func TestUpstreamWriteForwardsIdempotencyKey(t *testing.T) {
	g, p, _ := upstreamGateway(t, probeConfig+"tools:\n  up__echo: {access: write}\n")
	cs := connectMCP(t, g, nil)
	callText(t, cs, "up__echo", map[string]any{"text": "x"}, mcp.Meta{link.MetaCallID: "c7", link.MetaRequest: "r7"})
	// The key derived from the request and call id, digested with its owner
	// (idempotency.ToolKey), as a caller's own key is.
	if k, _ := p.lastMeta()[link.MetaIdempotencyKey].(string); k != idempotency.ToolKey(link.LocalPrincipal, "", "up__echo", "r7/c7") {
		t.Errorf("idempotency key upstream = %q, want %q", k, idempotency.ToolKey(link.LocalPrincipal, "", "up__echo", "r7/c7"))
	}
	// The same key again returns the recorded result without calling the upstream.
	before := len(p.metas)
	res, _ := callText(t, cs, "up__echo", map[string]any{"text": "x"}, mcp.Meta{link.MetaCallID: "c7", link.MetaRequest: "r7"})
	if res.IsError || len(p.metas) != before {
		t.Errorf("a repeated key reached the upstream again")
	}
}

func TestUpstreamCancelPropagates(t *testing.T) {
	t.Run("client cancels", func(t *testing.T) {
		g, p, _ := upstreamGateway(t, probeConfig)
		cs := connectMCP(t, g, nil)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__slow", Arguments: map[string]any{"text": "a"}})
			errc <- err
		}()
		waitFor(t, p.started, "the upstream call to start")
		cancel()
		waitFor(t, p.cancelled, "the upstream call to be cancelled")
		<-errc
	})
	t.Run("API cancels", func(t *testing.T) {
		g, p, srv := upstreamGateway(t, probeConfig)
		cs := connectMCP(t, g, nil)
		done := make(chan string, 1)
		go func() {
			_, text := callText(t, cs, "up__slow", map[string]any{"text": "b"}, mcp.Meta{link.MetaRequest: "job"})
			done <- text
		}()
		waitFor(t, p.started, "the upstream call to start")
		start := time.Now()
		if status, out := do(t, "POST", srv.URL+"/v1/requests/job/cancel", `{"mode":"cancel","reason":"runaway"}`, nil); status != 200 {
			t.Fatalf("cancel: %d %v", status, out)
		}
		waitFor(t, p.cancelled, "the upstream call to be cancelled")
		select {
		case text := <-done:
			if !strings.Contains(text, "runaway") {
				t.Errorf("the client read %q, want the stop's reason", text)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the client's call did not return")
		}
		t.Logf("cancel reached the upstream in %v", time.Since(start))
	})
}

// TestUpstreamAttemptTimesOut: a tool's attempt that outlasts its timeout
// fails as timed out, and the upstream is told to cancel the call, on the
// wire client (whose exchange enforces the attempt's deadline on its
// connection, with no timer of the runtime's).
func TestUpstreamAttemptTimesOut(t *testing.T) {
	g, p, _ := upstreamGateway(t, probeConfig+"tools:\n  up__slow: {timeout: 300ms, retry: {attempts: 1}}\n")
	cs := connectMCP(t, g, nil)
	start := time.Now()
	res, text := callText(t, cs, "up__slow", map[string]any{"text": "c"}, nil)
	took := time.Since(start)
	waitFor(t, p.cancelled, "the upstream call to be cancelled")
	if code, _ := res.Meta[link.MetaError].(map[string]any)["code"].(string); !res.IsError || code != "timeout" {
		t.Errorf("the call's result: %v %q, want a timeout", res.Meta, text)
	}
	if took > 5*time.Second {
		t.Errorf("the call took %v, its attempt's timeout is 300ms", took)
	}
	// The connection the timed-out exchange was on is not used again:
	// the next call is answered.
	if res, text := callText(t, cs, "up__echo", map[string]any{"text": "after"}, nil); res.IsError {
		t.Errorf("a call after the timeout: %q", text)
	}
}

func waitFor(t *testing.T, c chan string, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestUpstreamProgressPassesThrough(t *testing.T) {
	g, _, _ := upstreamGateway(t, probeConfig)
	var mu sync.Mutex
	var got []float64
	var tokens []any
	cs := connectMCP(t, g, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, r.Params.Progress)
		tokens = append(tokens, r.Params.ProgressToken)
		mu.Unlock()
	}})
	params := &mcp.CallToolParams{Name: "up__ticks", Arguments: map[string]any{"n": 3}}
	params.SetProgressToken("mine")
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("got %d progress notifications, want 3", len(got))
	}
	for _, tok := range tokens {
		if tok != "mine" {
			t.Errorf("progress token %v, want the client's own", tok)
		}
	}
}

// TestUpstreamCallbackNesting: an upstream tool whose implementation calls
// back through the gateway's API, forwarding the traceparent reach gave it,
// nests under its own frame, across two process boundaries; re-entering a
// non-reentrant tool that way is refused.
func TestUpstreamCallbackNesting(t *testing.T) {
	args := map[string]any{"tool": "up__callback", "args": map[string]any{"tool": "up__echo", "args": map[string]any{"text": "deep"}}}
	t.Run("reentrant", func(t *testing.T) {
		g, _, _ := upstreamGateway(t, probeConfig+"tools:\n  up__callback: {reentrancy: reentrant}\n")
		cs := connectMCP(t, g, nil)
		res, text := callText(t, cs, "up__callback", args, mcp.Meta{link.MetaRequest: "cb"})
		if res.IsError {
			t.Fatalf("outer callback: %s", text)
		}
		var inner map[string]any
		if err := json.Unmarshal([]byte(text), &inner); err != nil {
			t.Fatalf("outer callback returned %q", text)
		}
		if path(inner, "request_id") != "cb" || path(inner, "results", 0, "status") != "success" {
			t.Errorf("inner call = %v", inner)
		}
		r, _ := g.rt.Lookup("cb")
		byName := map[string]*reach.Frame{}
		for _, f := range r.Frames() {
			if byName[f.Name] == nil || f.Depth > byName[f.Name].Depth {
				byName[f.Name] = f
			}
		}
		echo := byName["up__echo"]
		if echo == nil || echo.Depth != 3 || echo.Parent == nil || echo.Parent.Name != "up__callback" || echo.Parent.Parent == nil {
			t.Errorf("up__echo frame = %+v, want depth 3 under two callbacks", echo)
		}
	})
	t.Run("non-reentrant", func(t *testing.T) {
		g, p, _ := upstreamGateway(t, probeConfig)
		cs := connectMCP(t, g, nil)
		_, text := callText(t, cs, "up__callback", args, mcp.Meta{link.MetaRequest: "cb"})
		if !strings.Contains(text, `"code":"reentrancy"`) {
			t.Errorf("re-entering up__callback from its upstream = %s, want a reentrancy refusal", text)
		}
		if n := len(p.metas); n != 1 {
			t.Errorf("the upstream saw %d calls, want 1 (the re-entry is refused before it runs)", n)
		}
	})
}

func TestUpstreamStdio(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Upstreams: []config.Upstream{{Name: "io", Command: []string{exe}, Env: map[string]config.Secret{"REACH_TEST_STDIO_UPSTREAM": "1"}}}}
	g := newTestGateway(t, cfg)
	if ups := g.Upstreams(); len(ups) != 1 || ups[0].Transport != "stdio" || !ups[0].Connected {
		t.Fatalf("upstream status = %+v", ups)
	}
	cs := connectMCP(t, g, nil)
	res, text := callText(t, cs, "io__echo", map[string]any{"text": "over stdio"}, nil)
	if res.IsError || text != "echo: over stdio" {
		t.Errorf("io__echo = %q", text)
	}
}

func TestUpstreamConfigErrors(t *testing.T) {
	p := newUpstreamProbe()
	up := serveUpstream(t, p)
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"override of a missing tool", "upstreams:\n  - name: up\n    url: URL\ntools:\n  up__ecko: {access: read}\n",
			[]string{"line 5", "no tool is exposed as up__ecko", "did you mean up__echo"}},
		// An upstream that cannot be reached fails the start when it is
		// required (TestStartsDegraded: otherwise the gateway starts without it).
		{"unreachable upstream", "upstreams:\n  - name: gone\n    url: http://127.0.0.1:1/mcp\n    timeout: 2s\n    required: true\n",
			[]string{"line 2", "upstream gone"}},
		{"missing program", "upstreams:\n  - name: nope\n    command: [/no/such/program]\n    required: true\n", []string{"line 2", "upstream nope"}},
		{"two upstreams, one name space", "upstreams:\n  - {name: a, url: URL, prefix: ''}\n  - {name: b, url: URL, prefix: ''}\n",
			[]string{"two tools are exposed as", "prefix"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(strings.ReplaceAll(tc.yaml, "URL", up.URL)), nil)
			if err != nil {
				t.Fatal(err)
			}
			g, err := New(context.Background(), cfg, nil)
			if err == nil {
				g.Close()
				t.Fatalf("New succeeded, want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestUpstreamSecretsStayHidden: a header secret reaches the upstream and
// nothing else: not the logs, results, graph, health or errors.
func TestUpstreamSecretsStayHidden(t *testing.T) {
	const secret = "s3cr3t-t0ken"
	p := newUpstreamProbe()
	var seen sync.Map
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, nil)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("Authorization"), true)
		inner.ServeHTTP(w, r)
	}))
	defer up.Close()
	t.Setenv("PROBE_TOKEN", secret)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: up\n    url: "+up.URL+"\n    headers: {Authorization: 'Bearer ${PROBE_TOKEN}'}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	g, err := New(context.Background(), cfg, &Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := serveTest(t, g)
	if _, ok := seen.Load("Bearer " + secret); !ok {
		t.Fatal("the upstream did not get the header")
	}
	var everything bytes.Buffer
	for _, call := range []string{`{"tool":"up__echo","arguments":{"text":"x"}}`, `{"tool":"up__fail","arguments":{}}`, `{"tool":"up__add","arguments":{"a":"x"}}`} {
		_, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"s","tool_calls":[{"call_id":"c",`+call[1:]+`]}`, nil)
		json.NewEncoder(&everything).Encode(out)
	}
	for _, u := range []string{"/v1/requests", "/v1/requests/s", "/v1/requests/s/graph", "/v1/requests/s/graph?format=dot", "/healthz"} {
		resp, err := http.Get(srv.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		everything.ReadFrom(resp.Body)
		resp.Body.Close()
	}
	everything.Write(logs.Bytes())
	if strings.Contains(everything.String(), secret) {
		t.Errorf("the secret leaked:\n%s", everything.String())
	}
}

// TestOfflineOverrideOfNoTool: offline, an override is an error when no
// upstream could expose its tool (a misspelt built-in one's, or one without
// an upstream's prefix), as it is online; one that an upstream not
// contacted could expose passes.
func TestOfflineOverrideOfNoTool(t *testing.T) {
	for _, tc := range []struct {
		yaml, want string
	}{
		{"tools:\n  get_ordr: {access: forbidden}\n", "line 2: tools: no tool is exposed as get_ordr (did you mean get_order?)"},
		{"upstreams:\n  - {name: up, url: 'http://127.0.0.1:1/mcp'}\ntools:\n  upp__echo: {access: read}\n", "line 4: tools: no tool is exposed as upp__echo"},
		{"upstreams:\n  - {name: up, url: 'http://127.0.0.1:1/mcp'}\ntools:\n  up__echo: {access: read}\n", ""},
		{"upstreams:\n  - {name: up, url: 'http://127.0.0.1:1/mcp', prefix: ''}\ntools:\n  anything: {access: read}\n", ""},
	} {
		cfg, err := config.Parse([]byte(tc.yaml), nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Data = t.TempDir()
		g, err := New(t.Context(), cfg, &Options{Offline: true, Ephemeral: true})
		if err == nil {
			g.Close()
		}
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("offline %q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
