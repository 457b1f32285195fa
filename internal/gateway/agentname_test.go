package gateway

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP client's name (clientInfo.name, which it picks) names its calls'
// agent in the audit and the views cut to 128 bytes, without the
// right-to-left override it had: a name of 1 MiB was written whole into
// every audit event of the session's calls.
func TestClientNameBoundedInAudit(t *testing.T) {
	g, url, _, keys := authGateway(t, "")
	name := strings.Repeat("a", 1<<20) + "\u202e"
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{keys["bob"], http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_kb", Arguments: map[string]any{"query": "refund"}}); err != nil {
		t.Fatal(err)
	}
	g.audit.Flush(t.Context())
	status, out := do(t, "GET", url+"/v1/audit", "", map[string]string{"Authorization": "Bearer " + keys["bob"]})
	if status != 200 {
		t.Fatalf("GET /v1/audit = %d %v", status, out)
	}
	events := out["events"].([]any)
	if len(events) == 0 {
		t.Fatal("no audit event of the call")
	}
	for _, e := range events {
		agent := fmt.Sprint(path(e, "event", "agent"))
		if len(agent) > 128 || !strings.HasPrefix(agent, "aaaa") || strings.Contains(agent, "\u202e") {
			t.Fatalf("%v event: agent of %d bytes, starting %.40q; want at most 128, without U+202E", path(e, "event", "kind"), len(agent), agent)
		}
	}
}
