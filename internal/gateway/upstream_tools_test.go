package gateway

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taggedToolServer serves an MCP server whose tools answer "<tag>: <tool>".
func taggedToolServer(t *testing.T, tag string, tools ...string) (*mcp.Server, *httptest.Server) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: tag, Version: "1"}, nil)
	for _, name := range tools {
		addTaggedTool(s, tag, name)
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return s, srv
}

func addTaggedTool(s *mcp.Server, tag, name string) {
	s.AddTool(&mcp.Tool{Name: name, Description: "Answer " + tag + ".", InputSchema: &jsonObject,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tag + ": " + name}}}, nil
		})
}

var jsonObject = map[string]any{"type": "object"}

// TestListChangedDoesNotTakeAnotherUpstreamsTool: an upstream that lists,
// after a list_changed, a tool under a name another upstream already
// exposes (both without a prefix) does not take that name over: calls to
// it still reach the upstream that had it.
func TestListChangedDoesNotTakeAnotherUpstreamsTool(t *testing.T) {
	_, a := taggedToolServer(t, "a", "echo")
	b, bsrv := taggedToolServer(t, "b", "other")
	yaml := "upstreams:\n  - name: a\n    url: " + a.URL + "\n    prefix: \"\"\n  - name: b\n    url: " + bsrv.URL + "\n    prefix: \"\"\n"
	cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	cs := connectMCP(t, g, nil)
	if _, text := callText(t, cs, "echo", map[string]any{}, nil); text != "a: echo" {
		t.Fatalf("echo before the change = %q", text)
	}
	addTaggedTool(b, "b", "echo")
	addTaggedTool(b, "b", "fresh")
	waitUntil(t, "b's new tool to be registered", func() bool { _, ok := g.rt.Tool("fresh"); return ok })
	if _, text := callText(t, cs, "echo", map[string]any{}, nil); text != "a: echo" {
		t.Errorf("echo after b listed one too = %q, want a's (a exposed it first)", text)
	}
	if _, text := callText(t, cs, "fresh", map[string]any{}, nil); text != "b: fresh" {
		t.Errorf("fresh = %q", text)
	}
	if !strings.Contains(toolNames(t, cs), "echo") {
		t.Errorf("tools/list lost echo: %s", toolNames(t, cs))
	}
	// b drops both: its fresh goes, a's echo stays.
	b.RemoveTools("echo", "fresh")
	waitUntil(t, "b's dropped tool to leave", func() bool { _, ok := g.rt.Tool("fresh"); return !ok })
	if _, text := callText(t, connectMCP(t, g, nil), "echo", map[string]any{}, nil); text != "a: echo" {
		t.Errorf("echo after b dropped its own = %q, want a's", text)
	}
}

// TestRestartedUpstreamIsReListed: an HTTP upstream that restarts (a new
// process on the same address, which knows no session of before) with
// another tool list gets its tools re-listed when reach reconnects: a new
// session owes no list_changed for what it had before.
func TestRestartedUpstreamIsReListed(t *testing.T) {
	s1, _ := taggedToolServer(t, "v1", "echo")
	srv1 := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s1 }, nil))
	addr := srv1.Listener.Addr().String()
	cfg, err := config.Parse([]byte("upstreams:\n  - name: up\n    url: "+srv1.URL+"\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	cs := connectMCP(t, g, nil)
	if _, text := callText(t, cs, "up__echo", map[string]any{}, nil); text != "v1: echo" {
		t.Fatalf("up__echo = %q", text)
	}
	srv1.Config.Close() // the process ends: its listener and connections close

	s2, _ := taggedToolServer(t, "v2", "echo", "fresh")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the address is taken again: %v", err)
	}
	srv2 := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s2 }, nil)}}
	srv2.Start()
	t.Cleanup(func() { srv2.Config.Close() })
	if _, text := callText(t, cs, "up__echo", map[string]any{}, nil); text != "v2: echo" {
		t.Fatalf("up__echo after the restart = %q", text)
	}
	waitUntil(t, "the restarted upstream's new tool to be listed", func() bool { _, ok := g.rt.Tool("up__fresh"); return ok })
	if _, text := callText(t, cs, "up__fresh", map[string]any{}, nil); text != "v2: fresh" {
		t.Errorf("up__fresh = %q", text)
	}
}
