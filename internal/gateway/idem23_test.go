package gateway

import (
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPRetryByKeyWhenBudgetSpent: through the gateway, a request whose
// one tool call spent its tool-call budget retries that call by its key:
// the retry is answered from the key's record, not refused over budget
// (calls were counted before their key was looked up); a call under a new
// key is refused, saying which budget is spent.
func TestMCPRetryByKeyWhenBudgetSpent(t *testing.T) {
	g := newTestGateway(t, &config.Config{Budgets: map[string]config.Budget{
		"default": {Budget: reach.Budget{ToolCalls: 1}},
	}})
	cs := connectMCP(t, g, nil)
	meta := func(key string) mcp.Meta {
		return mcp.Meta{link.MetaRequest: "spent", link.MetaIdempotencyKey: key}
	}
	first, want := callText(t, cs, "search_kb", map[string]any{"query": "a"}, meta("k1"))
	if first.IsError {
		t.Fatalf("first call refused: %s", want)
	}
	for i := range 2 {
		if res, text := callText(t, cs, "search_kb", map[string]any{"query": "a"}, meta("k1")); res.IsError || !strings.HasPrefix(text, want) || !strings.Contains(text, "nothing ran again") {
			t.Fatalf("retry %d with the budget spent: error %v, %q; want the first call's result %q, replayed", i, res.IsError, text, want)
		}
	}
	res, text := callText(t, cs, "search_kb", map[string]any{"query": "b"}, meta("k2"))
	if !res.IsError || !strings.Contains(text, "1 tool calls made of 1") {
		t.Errorf("a call under a new key = %v %q, want a tool-call budget refusal", res.IsError, text)
	}
	r, ok := g.rt.Lookup("spent")
	if !ok {
		t.Fatal("request spent not found")
	}
	if u := r.Usage().ToolCalls; u != 1 {
		t.Errorf("the request spent %d tool calls, want 1", u)
	}
}
