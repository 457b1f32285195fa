package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain lets the test binary act as a stdio upstream: with
// REACH_TEST_STDIO_UPSTREAM=1 it serves the echo server on stdin and
// stdout, with =big the echo server and addBigTools.
func TestMain(m *testing.M) {
	if mode := os.Getenv("REACH_TEST_STDIO_UPSTREAM"); mode != "" {
		stuckUpstream(mode) // a process that never answers (closestdio_test.go)
		s := echoServer()
		if mode == "big" {
			addBigTools(s)
		}
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// echoServer is an MCP server with one tool, echo.
func echoServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	type textIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	return s
}

// serveEcho serves the echo server over Streamable HTTP.
func serveEcho(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer() }, nil))
	t.Cleanup(srv.Close)
	return srv
}

// host is the pool's host in tests: a goroutine group, a catalog that
// drops what it is told, and no logging levels.
type host struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (h *host) Go(f func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.wg.Go(f)
	return true
}

func (h *host) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.wg.Wait()
}

func (*host) Relisted(string, []reach.Tool, []string)           {}
func (*host) Level(*mcp.ServerSession) (mcp.LoggingLevel, bool) { return "", false }
func (*host) SharedLevel() mcp.LoggingLevel                     { return "" }

// newPool connects a pool to cfg's upstreams, serving an empty MCP server,
// and closes it when the test ends.
func newPool(t *testing.T, cfg *config.Config) *Pool {
	t.Helper()
	return newPoolMasking(t, cfg, nil)
}

// newPoolMasking is newPool whose upstreams' tools and answers red masks.
func newPoolMasking(t *testing.T, cfg *config.Config, red *redact.Redactor) *Pool {
	t.Helper()
	life, cancel := context.WithCancel(context.Background())
	h := &host{}
	p, err := Connect(t.Context(), life, &Options{Config: cfg, Runner: h, Catalog: h, Levels: h, Models: reach.New(nil), Redactor: red})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	p.Serve(t.Context(), mcp.NewServer(&mcp.Implementation{Name: "gateway"}, nil))
	t.Cleanup(func() {
		cancel()
		h.close()
		p.Close()
	})
	return p
}

// echo calls an upstream's echo tool through its reach Func, in a request
// of its own, and returns the text.
func echo(t *testing.T, p *Pool, tool, text string) string {
	t.Helper()
	for _, rt := range p.Tools() {
		if rt.Name != tool {
			continue
		}
		args, _ := json.Marshal(map[string]string{"text": text})
		data, err := rt.Func(t.Context(), args)
		if err != nil {
			return err.Error()
		}
		var s string
		json.Unmarshal(data, &s)
		return s
	}
	t.Fatalf("no tool %s", tool)
	return ""
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestRedialIsPaced: an upstream whose session keeps dying is dialled
// again at most once a second, however many calls find it gone.
func TestRedialIsPaced(t *testing.T) {
	p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: serveEcho(t).URL}}})
	u := p.ups[0]
	dials := 0
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
		u.mu.Lock()
		dead := u.cs
		u.cs = nil // the session died
		u.mu.Unlock()
		if dead != nil {
			dead.Close()
		}
		if _, err := u.session(t.Context()); err == nil {
			dials++
		}
	}
	if dials > 3 {
		t.Errorf("%d dials in 1.5 s of a session that kept dying, want at most 3", dials)
	}
}

// TestStdioUpstreamEnvironmentIsItsOwn: a stdio upstream gets the safe
// variables and its own env, nothing else of the gateway's environment,
// even when none of the safe variables is set.
func TestStdioUpstreamEnvironmentIsItsOwn(t *testing.T) {
	for _, k := range safeEnv {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("REACH_TEST_GATEWAY_SECRET", "sk-stays-here")
	p := newPool(t, &config.Config{})
	for _, env := range []map[string]config.Secret{nil, {"OWN": "yes"}} {
		u := p.newUpstream(0, config.Upstream{Name: "x", Command: []string{"env"}, Env: env})
		cmd := u.transport().(*inOrder).Transport.(*commandTransport).cmd
		if cmd.Env == nil { // exec would pass on the gateway's whole environment
			t.Errorf("env %v: the upstream inherits the gateway's environment", env)
		}
		for _, kv := range cmd.Env {
			if strings.HasPrefix(kv, "REACH_TEST_GATEWAY_SECRET=") {
				t.Errorf("env %v: the upstream gets the gateway's %s", env, kv)
			}
		}
		if env != nil && !slices.Contains(cmd.Env, "OWN=yes") {
			t.Errorf("the upstream's env = %q, want its own OWN=yes", cmd.Env)
		}
	}
}

// TestFindIgnoresEndedCalls: a message from an upstream that names a call
// no longer in flight (reach/parent, or a traceparent with that call's
// span) goes to no client, not to the one whose call is in flight; a
// traceparent from another tracer, or no name, still lets the only client
// with calls in flight have it.
func TestFindIgnoresEndedCalls(t *testing.T) {
	var fs openCalls
	cs := &mcp.ClientSession{}
	a := &openCall{frame: &reach.Frame{ID: 0xa1}, ss: &mcp.ServerSession{}}
	b := &openCall{frame: &reach.Frame{ID: 0xb1}, ss: &mcp.ServerSession{}}
	doneA := fs.add(cs, a)
	defer fs.add(cs, b)()
	doneA()
	tp := func(id reach.FrameID) string { return "00-0af7651916cd43dd8448eb211c80319c-" + id.String() + "-01" }
	for _, tc := range []struct {
		name string
		meta mcp.Meta
		want *openCall
	}{
		{"reach/parent of the ended call", mcp.Meta{link.MetaParent: a.frame.ID.String()}, nil},
		{"traceparent of the ended call", mcp.Meta{link.MetaTraceparent: tp(a.frame.ID)}, nil},
		{"reach/parent of no call", mcp.Meta{link.MetaParent: reach.FrameID(0xc1).String()}, nil},
		{"reach/parent of the call in flight", mcp.Meta{link.MetaParent: b.frame.ID.String()}, b},
		{"traceparent of another tracer", mcp.Meta{link.MetaTraceparent: tp(0xd1)}, b},
		{"no name", mcp.Meta{}, b},
	} {
		if got := fs.find(cs, tc.meta, hasSession); got != tc.want {
			t.Errorf("%s: found %p, want %p (b is %p)", tc.name, got, tc.want, b)
		}
	}
}

// TestCallerGoneBeforeSessionNotSent: a call whose caller went away while
// the upstream's session was being opened again is answered as not sent
// (reach.NotSentError: its retry runs it, and it is not taken for a call
// the upstream began), and so is one whose caller went away before its
// request was written. Before, the caller's error came back as the tool's,
// and a write's retry was told it may have taken effect.
func TestCallerGoneBeforeSessionNotSent(t *testing.T) {
	p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: serveEcho(t).URL}}})
	u := p.ups[0]
	var fn reach.ToolFunc
	for _, rt := range p.Tools() {
		if rt.Name == "up__echo" {
			fn = rt.Func
		}
	}
	if fn == nil {
		t.Fatal("no tool up__echo")
	}
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	for _, drop := range []bool{true, false} {
		if drop {
			u.mu.Lock()
			dead := u.cs
			u.cs = nil // the session died: the call waits for it to be opened again
			u.mu.Unlock()
			if dead != nil {
				dead.Close()
			}
		} else if _, err := u.session(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, err := fn(gone, json.RawMessage(`{"text":"hi"}`))
		var ns *reach.NotSentError
		if !errors.As(err, &ns) {
			t.Fatalf("session dropped %v: the call of a caller gone: %v (%T); want reach.NotSentError", drop, err, err)
		}
	}
}
