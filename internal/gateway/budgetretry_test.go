package gateway

import (
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPRetryByKeySpendsOneToolCall: through the gateway (its SQLite
// store keeping the key's record), an MCP client that retries a call with
// its idempotency key gets the recorded result, and its request's
// tool-call budget counts the call once: with a budget of 2, the retries
// are answered, the next call runs, and only the one after it is refused
// as over budget, saying which budget and what to do. Before, the first
// retry spent the second call of the budget and the next one was refused.
func TestMCPRetryByKeySpendsOneToolCall(t *testing.T) {
	g := newTestGateway(t, &config.Config{Budgets: map[string]config.Budget{
		"default": {Budget: reach.Budget{ToolCalls: 2}},
	}})
	cs := connectMCP(t, g, nil)
	meta := func(key string) mcp.Meta {
		return mcp.Meta{link.MetaRequest: "retried", link.MetaIdempotencyKey: key}
	}
	first, want := callText(t, cs, "search_kb", map[string]any{"query": "a"}, meta("k1"))
	if first.IsError {
		t.Fatalf("first call refused: %s", want)
	}
	for i := range 3 {
		if res, text := callText(t, cs, "search_kb", map[string]any{"query": "a"}, meta("k1")); res.IsError || !strings.HasPrefix(text, want) || !strings.Contains(text, "nothing ran again") {
			t.Fatalf("retry %d: error %v, %q; want the first call's result %q, replayed", i, res.IsError, text, want)
		}
	}
	if res, text := callText(t, cs, "search_kb", map[string]any{"query": "b"}, meta("k2")); res.IsError {
		t.Fatalf("the second call, after three retries of the first: %s", text)
	}
	res, text := callText(t, cs, "search_kb", map[string]any{"query": "c"}, meta("k3"))
	if !res.IsError || !strings.Contains(text, "tool-call budget") || !strings.Contains(text, "2 tool calls made of 2") || !strings.Contains(text, "answer with what you have") {
		t.Errorf("the third call = %v %q, want a tool-call budget refusal saying what is spent and what to do", res.IsError, text)
	}
	r, ok := g.rt.Lookup("retried")
	if !ok {
		t.Fatal("request retried not found")
	}
	if u := r.Usage().ToolCalls; u != 2 {
		t.Errorf("the request spent %d tool calls, want 2", u)
	}
}
