package gateway

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLongCallNamesRefused: a call id, an idempotency key or a reason
// longer than it may be, in an envelope of /v1/calls or in an MCP call's
// _meta, is refused before any call is made, saying which and how long it
// may be; the audit log has no event of it. A 3 MB call id was kept whole
// in the call's audit event, where its arguments keep a 16 KiB preview:
// each audit page that listed such calls was megabytes for each.
func TestLongCallNamesRefused(t *testing.T) {
	cfg := &config.Config{Data: t.TempDir()}
	srv := serveTest(t, newTestGateway(t, cfg))
	long := strings.Repeat("c", 1<<20)
	audited := func() int {
		t.Helper()
		status, out := do(t, "GET", srv.URL+"/v1/audit?limit=1000", "", nil)
		if status != 200 {
			t.Fatalf("audit: %d %v", status, out)
		}
		return len(fmt.Sprint(out))
	}
	for _, c := range []struct{ field, call string }{
		{"call_id", `{"call_id":"` + long + `","tool":"get_order","arguments":{"order_id":"1001"}}`},
		{"idempotency_key", `{"call_id":"a","idempotency_key":"` + long + `","tool":"get_order","arguments":{"order_id":"1001"}}`},
		{"why", `{"call_id":"a","why":"` + long + `","tool":"get_order","arguments":{"order_id":"1001"}}`},
	} {
		status, out := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[`+c.call+`]}`, nil)
		msg := fmt.Sprint(path(out, "error", "message"))
		if status != 400 || !strings.Contains(msg, "tool_calls[0]: "+c.field) || len(msg) > 1000 {
			t.Errorf("an envelope with a %s of 1 MiB: %d %.300s, want 400 naming it", c.field, status, msg)
		}
	}
	cs, err := mcpAs(t, srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range []struct {
		key string
		max int
	}{{link.MetaCallID, reach.MaxCallID}, {link.MetaIdempotencyKey, reach.MaxIdempotencyKey}, {link.MetaWhy, reach.MaxWhy}} {
		key, max, order := m.key, m.max, fmt.Sprint(1001+i) // another order each: the same call again would be a loop
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_order", Arguments: map[string]any{"order_id": "1001"}, Meta: mcp.Meta{key: long}})
		if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), fmt.Sprint(max)) {
			t.Errorf("an MCP call with a _meta %s of 1 MiB: %v, want it refused naming it", key, err)
		}
		// At the bound, it is taken.
		if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_order", Arguments: map[string]any{"order_id": order}, Meta: mcp.Meta{key: strings.Repeat("k", max)}}); err != nil || res.IsError {
			t.Errorf("an MCP call with a _meta %s of %d bytes: %v %v, want it run", key, max, res, err)
		}
	}
	if n := audited(); n > 64<<10 {
		t.Errorf("the audit log's page is %d bytes: a refused call's long names reached it", n)
	}
}
