package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveFlakyUpstream serves an MCP upstream whose two tools, quote and
// stock, answer every call with an error result: "503 temporarily overloaded, retry in a
// moment" for {"mode":"busy"}, "the price table is corrupt" otherwise. It
// counts the calls that reach it. (A refusal quotes the result it refuses
// to repeat: the tests tell a failure from a refusal by how it begins.)
func serveFlakyUpstream(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	s := mcp.NewServer(&mcp.Implementation{Name: "flaky", Version: "1"}, nil)
	fail := func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Mode string `json:"mode"`
	}) (*mcp.CallToolResult, any, error) {
		calls.Add(1)
		text := "the price table is corrupt"
		if in.Mode == "busy" {
			text = "503 temporarily overloaded, retry in a moment"
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "quote", Description: "Price a product.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, fail)
	mcp.AddTool(s, &mcp.Tool{Name: "stock", Description: "Count a product.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, fail)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, &calls
}

// TestRetryableUpstreamErrorIsNotALoop: an upstream tool declared
// `retryable` that answers "503 temporarily overloaded, retry in a moment"
// as an error result may be tried again: the executor retries it within
// each call (its retry policy: 2 attempts), the model's third and fourth
// tries reach the upstream, and the fifth is refused by the retry budget,
// not as a repeat. A tool that is not declared retryable gets the same
// treatment when its error says it is temporary; when its error says
// nothing of the kind, the third identical try is refused as a repeat.
// (The circuit breakers are off: they would open after five failures, and
// this is the loop guard's test.)
func TestRetryableUpstreamErrorIsNotALoop(t *testing.T) {
	up, calls := serveFlakyUpstream(t)
	cfg, err := config.Parse([]byte("breaker: {disabled: true}\nupstreams:\n  - name: up\n    url: "+up.URL+"\n"+
		"tools:\n  up__quote: {retryable: true, retry: {attempts: 2, base: 1ms, max: 1ms}}\n  up__stock: {retry: {attempts: 1}}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)

	busy := connectMCP(t, g, nil)
	for i := 1; i <= 4; i++ {
		res, text := callText(t, busy, "up__quote", map[string]any{"mode": "busy"}, nil)
		if !res.IsError || !strings.HasPrefix(text, "up__quote failed") || !strings.Contains(text, "temporarily overloaded") {
			t.Fatalf("try %d = %q (isError %v), want the upstream's error", i, text, res.IsError)
		}
	}
	if n := calls.Load(); n != 8 {
		t.Errorf("the upstream saw %d calls for 4 tries, want 8 (2 attempts each)", n)
	}
	res, text := callText(t, busy, "up__quote", map[string]any{"mode": "busy"}, nil)
	if !res.IsError || !strings.Contains(text, "retry budget") {
		t.Errorf("fifth try = %q, want a refusal by the retry budget", text)
	}
	if n := calls.Load(); n != 8 {
		t.Errorf("the refused try reached the upstream (%d calls)", n)
	}

	stock := connectMCP(t, g, nil)
	for i := 1; i <= 4; i++ {
		if res, text := callText(t, stock, "up__stock", map[string]any{"mode": "busy"}, nil); !res.IsError || !strings.HasPrefix(text, "up__stock failed") {
			t.Fatalf("stock, try %d = %q, want the upstream's error", i, text)
		}
	}
	if res, text := callText(t, stock, "up__stock", map[string]any{"mode": "busy"}, nil); !res.IsError || !strings.Contains(text, "retry budget") {
		t.Errorf("stock, fifth try = %q, want a refusal by the retry budget", text)
	}

	broken := connectMCP(t, g, nil)
	for i := 1; i <= 2; i++ {
		if res, text := callText(t, broken, "up__stock", map[string]any{"mode": "broken"}, nil); !res.IsError || !strings.HasPrefix(text, "up__stock failed") {
			t.Fatalf("try %d = %q, want the upstream's error", i, text)
		}
	}
	res, text = callText(t, broken, "up__stock", map[string]any{"mode": "broken"}, nil)
	if !res.IsError || !strings.Contains(text, "already ran 2 times") {
		t.Errorf("third try of a call that fails the same way = %q, want a refusal as a repeat", text)
	}
}
