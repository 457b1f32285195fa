package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRequestIDRefusesControlCharacters: a request id is shown to
// operators (reach requests, approval prompts), so one with a control
// character (a terminal escape, a newline), a format character (a
// right-to-left override, a zero-width space) or a line separator, or that
// is not UTF-8, is refused as a long one is, however it came, and no
// request is begun.
func TestRequestIDRefusesControlCharacters(t *testing.T) {
	fake := &fakeOpenAI{toolName: "search_kb", args: `{}`}
	g, srv := proxyGateway(t, fake, "")
	for _, tc := range []struct {
		name, json, baggage, id string
	}{
		{"escape", `x\u001b[3Ay`, "x%1B%5B3Ay", "x\x1b[3Ay"},
		{"newline", `x\ny`, "x%0Ay", "x\ny"},
		{"tab", `x\ty`, "x%09y", "x\ty"},
		{"delete", `x\u007fy`, "x%7Fy", "x\x7fy"},
		{"C1 CSI", `x\u009by`, "x%C2%9By", "x\u009by"},
		{"not UTF-8", "", "x%FFy", "x\xffy"},
		// Format characters and separators: "r1" and "r1\u200b" look
		// alike on the UI's pages, and an override turns what follows.
		{"right-to-left override", `r1\u202eevil`, "r1%E2%80%AEevil", "r1\u202eevil"},
		{"zero-width space", `r1\u200b`, "r1%E2%80%8B", "r1\u200b"},
		{"byte order mark", `\ufeffr1`, "%EF%BB%BFr1", "\ufeffr1"},
		{"line separator", `r1\u2028x`, "r1%E2%80%A8x", "r1\u2028x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.json != "" {
				status, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"`+tc.json+`","tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{}}]}`, nil)
				if status != 400 || path(out, "error", "code") != "bad_request_id" {
					t.Errorf("/v1/calls with request id %q = %d %v, want 400 bad_request_id", tc.id, status, out)
				}
				cs := connectMCP(t, g, nil)
				_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_kb",
					Arguments: map[string]any{"query": "a"}, Meta: mcp.Meta{link.MetaRequest: tc.id}})
				if err == nil || !strings.Contains(err.Error(), "control character") {
					t.Errorf("MCP with request id %q: error %v, want one saying it has a control character", tc.id, err)
				}
			}
			baggage := map[string]string{link.HeaderBaggage: "reach.request=" + tc.baggage}
			status, out := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{}}]}`, baggage)
			if status != 400 || path(out, "error", "code") != "bad_request_id" {
				t.Errorf("/v1/calls with baggage request id %q = %d %v, want 400 bad_request_id", tc.id, status, out)
			}
			resp, b := postChat(t, srv.URL, `{"messages":[]}`, baggage)
			if resp.StatusCode != 400 || !strings.Contains(string(b), "bad_request_id") {
				t.Errorf("model proxy with request id %q = %d %s, want 400 bad_request_id", tc.id, resp.StatusCode, b)
			}
			if _, ok := g.rt.Lookup(tc.id); ok {
				t.Errorf("request %q was begun", tc.id)
			}
		})
	}
	if n := fake.n.Load(); n != 0 {
		t.Errorf("the model was asked %d times", n)
	}
	// Printable ids, non-ASCII ones included, still work.
	for _, id := range []string{"order-1001", "naïve ✓ 注文", "a b"} {
		status, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"`+id+`","tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"a"}}]}`, nil)
		if status != 200 || path(out, "request_id") != id {
			t.Errorf("/v1/calls with request id %q = %d %v, want 200", id, status, out)
		}
	}
}
