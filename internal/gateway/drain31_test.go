package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestDrained31CallsRefusedShuttingDown: once the gateway drains its
// runtime (a stop past its grace), a call through the HTTP API and one
// through MCP are refused shutting_down, nothing run: the API's result
// says so with a suggestion, and the MCP result is an error (isError)
// whose text tells the model to call again through another instance or
// later.
func TestDrained31CallsRefusedShuttingDown(t *testing.T) {
	g := newTestGateway(t, nil)
	cs := connectMCP(t, g, nil)
	srv := serveTest(t, g)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	g.Runtime().Drain(done)

	status, out := do(t, http.MethodPost, srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"c1","tool":"get_order","arguments":{"order_id":"A-1"}}]}`, nil)
	results, _ := out["results"].([]any)
	if status != http.StatusOK || len(results) != 1 {
		t.Fatalf("POST /v1/calls once drained: %d %v", status, out)
	}
	r, _ := results[0].(map[string]any)
	e, _ := r["error"].(map[string]any)
	if r["status"] != "refused" || e["code"] != "shutting_down" || e["suggestion"] == "" {
		t.Errorf("the API's call once drained: %v; want refused shutting_down, with a suggestion", r)
	}

	res, text, re := mcpCall(t, cs, "get_order", "A-1")
	if !res.IsError || re == nil || re.Code != "shutting_down" || !strings.Contains(text, "another instance") {
		t.Errorf("the MCP call once drained: isError %v, %q, %+v; want an error result saying shutting_down and what to do", res.IsError, text, re)
	}
}
