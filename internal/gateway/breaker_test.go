//go:build unix

package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHelperHTTPUpstream is not a test: it is the MCP server that
// kbServer runs in a child process (this test binary) on
// $REACH_TEST_HTTP_UPSTREAM, over Streamable HTTP. Each run of a tool
// appends "TOOL ID" to $RUNFILE, so that a test counts what ran across the
// server's deaths. lookup and search are reads; record is a write.
func TestHelperHTTPUpstream(t *testing.T) {
	addr := os.Getenv("REACH_TEST_HTTP_UPSTREAM")
	if addr == "" {
		t.Skip("the helper process of the breaker tests")
	}
	name, runs := os.Getenv("UPSTREAM_NAME"), os.Getenv("RUNFILE")
	ran := func(tool, id string) {
		f, err := os.OpenFile(runs, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(f, "%s %s\n", tool, id)
		f.Close()
	}
	type in struct {
		ID string `json:"id"`
	}
	type out struct {
		ID   string `json:"id"`
		From string `json:"from"`
	}
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	for _, tool := range []string{"lookup", "search", "record"} {
		var ann *mcp.ToolAnnotations
		if tool != "record" {
			ann = &mcp.ToolAnnotations{ReadOnlyHint: true}
		}
		mcp.AddTool(s, &mcp.Tool{Name: tool, Description: tool + " an entry", Annotations: ann},
			func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
				ran(tool, a.ID)
				return nil, out{ID: a.ID, From: name}, nil
			})
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	http.Serve(ln, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	os.Exit(0)
}

// kbServer is TestHelperHTTPUpstream in a child process, which a test
// kills and starts again on the same address.
type kbServer struct {
	name, addr, runs string
	cmd              *exec.Cmd
}

func startKB(t testing.TB, name string) *kbServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	k := &kbServer{name: name, addr: addr, runs: filepath.Join(t.TempDir(), name+".runs")}
	k.start(t)
	t.Cleanup(func() { k.kill(t) })
	return k
}

func (k *kbServer) url() string { return "http://" + k.addr + "/mcp" }

// start runs the server and waits until it listens.
func (k *kbServer) start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHTTPUpstream$")
	cmd.Env = append(os.Environ(), "REACH_TEST_HTTP_UPSTREAM="+k.addr, "UPSTREAM_NAME="+k.name, "RUNFILE="+k.runs)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k.cmd = cmd
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", k.addr, time.Second); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream %s did not listen on %s within 30s", k.name, k.addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// kill ends the server with SIGKILL: it goes away without a word.
func (k *kbServer) kill(t testing.TB) {
	if k.cmd == nil {
		return
	}
	k.cmd.Process.Signal(syscall.SIGKILL)
	k.cmd.Wait()
	k.cmd = nil
}

// ran returns what the server ran, "TOOL ID" a line, over all its lives.
func (k *kbServer) ran(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(k.runs)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
}

// breakerGateway serves a gateway in front of kb and mirror (each a
// kbServer): kb's breaker opens after 3 failures and probes after
// openFor; kb__lookup falls back to mirror__lookup.
func breakerGateway(t testing.TB, kb, mirror *kbServer, openFor time.Duration) *Gateway {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`upstreams:
  - {name: kb, url: %s, breaker: {failures: 3, open_for: %s}}
  - {name: mirror, url: %s}
tools:
  kb__lookup:
    retry: {attempts: 2, base: 1ms, max: 1ms}
    fallback: [{tool: mirror__lookup, args: '{"id": "m-{args.id}"}'}]
  kb__search: {retry: {attempts: 2, base: 1ms, max: 1ms}}
`, kb.url(), openFor, mirror.url())), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	return newTestGateway(t, cfg)
}

// mcpCall calls tool with {"id": id} and returns the result, its text and
// its structured error, if any.
func mcpCall(t testing.TB, cs *mcp.ClientSession, tool, id string) (*mcp.CallToolResult, string, *reach.Error) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"id": id}})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", tool, err)
	}
	var text string
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	var e *reach.Error
	if raw, ok := res.Meta[link.MetaError]; ok {
		b, _ := json.Marshal(raw)
		json.Unmarshal(b, &e)
	}
	return res, text, e
}

func upstreamBreaker(g *Gateway, name string) reach.BreakerStatus {
	for _, b := range g.rt.Breakers() {
		if b.Kind == reach.BreakerUpstream && b.Name == name {
			return b
		}
	}
	return reach.BreakerStatus{State: -1}
}

// TestBreakerAgainstAKilledUpstream runs reach in front of an upstream
// MCP server process that is killed and started again: while it is gone,
// its tools fail until its breaker opens, then at once with the breaker's
// error (what is down and since when, when it is tried again), writes
// included; a read with a fallback is answered by the fallback, and says
// so; once it is back, one probe after the probe interval closes the
// breaker, and calls reach it again. The server's own record shows that
// no call was lost or ran twice.
func TestBreakerAgainstAKilledUpstream(t *testing.T) {
	kb, mirror := startKB(t, "kb"), startKB(t, "mirror")
	g := breakerGateway(t, kb, mirror, 300*time.Millisecond)
	srv := serveTest(t, g)
	cs := connectMCP(t, g, nil)
	var want []string // what kb must have run, once each

	// Up: every call runs once.
	for i := range 3 {
		for _, tool := range []string{"lookup", "record"} {
			id := fmt.Sprintf("up%d", i)
			if res, text, _ := mcpCall(t, cs, "kb__"+tool, id); res.IsError || !strings.Contains(text, `"from":"kb"`) {
				t.Fatalf("kb__%s while up: %s", tool, text)
			}
			want = append(want, tool+"_"+id)
		}
	}

	// Killed: the calls fail with what happened, until the breaker opens.
	kb.kill(t)
	for i := 0; upstreamBreaker(g, "kb").State != reach.BreakerOpen; i++ {
		if i == 3 {
			t.Fatalf("the breaker of kb is %+v after %d failing calls (2 attempts each), want open after 3 attempts", upstreamBreaker(g, "kb"), i)
		}
		res, text, e := mcpCall(t, cs, "kb__search", fmt.Sprintf("down%d", i))
		if !res.IsError || e == nil || (e.Type != reach.TypeTransient && e.Type != reach.TypeUnavailable) {
			t.Fatalf("kb__search with kb gone: %s %+v", text, e)
		}
	}
	// Open: its read without a fallback fails at once, naming what is
	// down, since when and when it is tried again.
	b := upstreamBreaker(g, "kb")
	res, text, e := mcpCall(t, cs, "kb__search", "open1")
	if !res.IsError || e == nil || e.Type != reach.TypeUnavailable || e.Code != "breaker_open" {
		t.Fatalf("kb__search while open: %s %+v", text, e)
	}
	for _, want := range []string{"kb__search is unavailable", "its upstream kb has been failing since " + b.FailingSince.UTC().Format(time.RFC3339),
		"tries it again at " + b.RetryAt.UTC().Format(time.RFC3339), "connection refused"} {
		if !strings.Contains(text, want) {
			t.Errorf("the model reads %q, missing %q", text, want)
		}
	}
	// A write fails at once too, and never falls back.
	if res, text, e := mcpCall(t, cs, "kb__record", "open2"); !res.IsError || e == nil || e.Code != "breaker_open" || res.Meta[link.MetaFallback] != nil {
		t.Errorf("kb__record while open: %s %+v", text, e)
	}
	// A read with a fallback is answered by it, and says so.
	res, text, _ = mcpCall(t, cs, "kb__lookup", "open3")
	if res.IsError || res.Meta[link.MetaFallback] != "mirror__lookup" || !strings.Contains(text, `"from":"mirror"`) ||
		!strings.Contains(text, "this result comes from its fallback mirror__lookup, not from kb__lookup") {
		t.Errorf("kb__lookup while open: %v %s", res.Meta, text)
	}
	if got := mirror.ran(t); !slices.Equal(got, []string{"lookup_m-open3"}) {
		t.Errorf("mirror ran %q, want the fallback's lookup with the template's id", got)
	}
	// Visible in /healthz and /metrics.
	_, health := do(t, "GET", srv.URL+"/healthz", "", nil)
	if health["status"] != "degraded" || !strings.Contains(fmt.Sprint(health["breakers"]), "state:open") {
		t.Errorf("/healthz = %v, want kb's breaker open", health)
	}
	if _, m := get(t, srv.URL+"/metrics"); !strings.Contains(m, `reach_breaker_state{kind="upstream",name="kb"} 1`) {
		t.Errorf("/metrics lacks kb's breaker open:\n%s", m)
	}

	// Back: after the probe interval, one call probes, and its success
	// closes the breaker.
	kb.start(t)
	time.Sleep(time.Until(upstreamBreaker(g, "kb").RetryAt))
	if res, text, _ := mcpCall(t, cs, "kb__search", "probe"); res.IsError || !strings.Contains(text, `"from":"kb"`) {
		t.Fatalf("the probe: %s", text)
	}
	want = append(want, "search_probe")
	if b := upstreamBreaker(g, "kb"); b.State != reach.BreakerClosed {
		t.Fatalf("kb's breaker after a good probe: %+v, want closed", b)
	}
	for _, tool := range []string{"lookup", "record"} {
		res, text, _ := mcpCall(t, cs, "kb__"+tool, "back")
		if res.IsError || res.Meta[link.MetaFallback] != nil || !strings.Contains(text, `"from":"kb"`) {
			t.Errorf("kb__%s after recovery: %v %s", tool, res.Meta, text)
		}
		want = append(want, tool+"_back")
	}
	// kb ran every call that succeeded through it, once each, and none of
	// those that failed.
	got := kb.ran(t)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("kb ran %q, want %q", got, want)
	}
}

// BenchmarkBreakerKilledUpstream measures, as served (MCP over Streamable
// HTTP to the gateway, its store on), calls to the read tools of an
// upstream process that was killed (SIGKILL: connections are refused) or
// hung (SIGSTOP: connections are accepted, nothing answers; the tools
// time out after 500ms). The first nine calls open its breaker; ns/op is
// a call after that — open: kb__search, failed at once with the
// breaker's error; fallback: kb__lookup, answered by mirror__lookup;
// off: kb__search with the breakers disabled, which tries the dead
// upstream each time (two attempts); up: kb__search with kb alive, for
// scale. 10th-call-ms is the tenth call's own latency. The calls of one
// variant are one request, except with the breakers off, a request each
// (the loop guard of one request refuses the ninth try of a failing
// tool).
func BenchmarkBreakerKilledUpstream(b *testing.B) {
	for _, bc := range []struct{ name, tool, want string }{
		{"killed/open", "kb__search", "breaker_open"},
		{"killed/fallback", "kb__lookup", "mirror__lookup"},
		{"killed/off", "kb__search", "unavailable"},
		{"hung/open", "kb__search", "breaker_open"},
		{"hung/off", "kb__search", "timeout"},
		{"up", "kb__search", ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			kb, mirror := startKB(b, "kb"), startKB(b, "mirror")
			off := strings.HasSuffix(bc.name, "/off")
			breaker, all := "{failures: 3, open_for: 1h}", "{}"
			if off {
				breaker, all = "{disabled: true}", "{disabled: true}"
			}
			cfg, err := config.Parse([]byte(fmt.Sprintf(`breaker: %s
upstreams:
  - {name: kb, url: %s, breaker: %s}
  - {name: mirror, url: %s}
tools:
  kb__lookup:
    retry: {attempts: 2, base: 1ms, max: 1ms}
    fallback: [{tool: mirror__lookup, args: '{"id": "m-{args.id}"}'}]
  kb__search: {timeout: 500ms, retry: {attempts: 2, base: 1ms, max: 1ms}}
budgets:
  default: {turns: 0, depth: 0, tool_calls: 0, wall: 0s}
`, all, kb.url(), breaker, mirror.url())), os.LookupEnv)
			if err != nil {
				b.Fatal(err)
			}
			g := newTestGateway(b, cfg)
			srv := serveTest(b, g)
			cs := benchClient(b, srv.URL+"/mcp", "")
			switch {
			case strings.HasPrefix(bc.name, "killed"):
				kb.kill(b)
			case strings.HasPrefix(bc.name, "hung"):
				kb.cmd.Process.Signal(syscall.SIGSTOP)
			}
			call := func(i int) *mcp.CallToolResult {
				p := &mcp.CallToolParams{Name: bc.tool, Arguments: map[string]any{"id": fmt.Sprint(i)}}
				if off {
					p.Meta = mcp.Meta{link.MetaRequest: fmt.Sprintf("b%d", i)}
				}
				res, err := cs.CallTool(context.Background(), p)
				if err != nil {
					b.Fatal(err)
				}
				return res
			}
			check := func(res *mcp.CallToolResult) {
				got := ""
				if e, ok := res.Meta[link.MetaError].(map[string]any); ok {
					got, _ = e["code"].(string)
				}
				if f, ok := res.Meta[link.MetaFallback].(string); ok {
					got = f
				}
				if got != bc.want {
					b.Fatalf("%v, want %q", res.Meta, bc.want)
				}
			}
			for i := range 9 {
				call(i)
			}
			start := time.Now()
			res := call(9)
			tenth := time.Since(start)
			check(res)
			i := 10
			for b.Loop() {
				check(call(i))
				i++
			}
			b.ReportMetric(float64(tenth.Microseconds())/1000, "10th-call-ms")
		})
	}
}

// TestWarnsOfFallbacksThatCannotAnswer: reach validate warns of a
// fallback that names no tool, or a tool that is not a read (skipped when
// its read fails).
func TestWarnsOfFallbacksThatCannotAnswer(t *testing.T) {
	cfg, err := config.Parse([]byte(`examples: true
tools:
  search_kb: {fallback: [no_such_tool, refund_order]}
`), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(newTestGateway(t, cfg).Warnings(), "\n")
	for _, want := range []string{"tool search_kb: its fallback names no_such_tool, which is not a tool here",
		"tool search_kb: its fallback refund_order is a write tool"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
}

// TestFallbackOfAWriteIsRefusedWithItsLine: a fallback on a tool that
// is a write by its own contract (here a built-in example's) is refused
// when the gateway is built, naming the configuration's line.
func TestFallbackOfAWriteIsRefusedWithItsLine(t *testing.T) {
	cfg, err := config.Parse([]byte("examples: true\ntools:\n  refund_order:\n    fallback: [search_kb]\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Data = t.TempDir()
	g, err := New(context.Background(), cfg, nil)
	if err == nil {
		g.Close()
		t.Fatal("New accepted a fallback on a write")
	}
	if !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "fallback is for reads") {
		t.Errorf("New: %v, want the line and why", err)
	}
}
