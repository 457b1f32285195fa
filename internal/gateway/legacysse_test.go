package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client of the HTTP+SSE transport (protocol 2024-11-05, which reach
// offers), pinned before Streamable HTTP came: the MCP TypeScript SDK's
// SSEClientTransport, OpenAI Agents' MCPServerSSE, a config's "type":
// "sse". It opens GET /sse, is told where to POST, and reads its answers
// from the stream; its session is one request, as a Streamable HTTP one.
func TestLegacySSE(t *testing.T) {
	g, _, _ := upstreamGateway(t, probeConfig+"tools:\n  up__slow: {access: forbidden}\n")
	url := serveTest(t, g).URL + "/sse"
	c := mcp.NewClient(&mcp.Implementation{Name: "sse-client", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.SSEClientTransport{Endpoint: url, HTTPClient: http.DefaultClient}, nil)
	if err != nil {
		t.Fatalf("connect over SSE: %v", err)
	}
	defer cs.Close()
	names := map[string]bool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names[tool.Name] = true
	}
	if !names["up__echo"] || names["up__slow"] {
		t.Errorf("tools/list = %v, want up__echo and not the forbidden up__slow", names)
	}
	var reqs []string
	for i := range 2 {
		res, got := callText(t, cs, "up__echo", map[string]any{"text": "same"}, nil)
		if res.IsError || got != "echo: same" {
			t.Fatalf("call %d: %q", i, got)
		}
		id, _ := res.Meta[link.MetaRequest].(string)
		reqs = append(reqs, id)
	}
	if reqs[0] == "" || reqs[0] != reqs[1] {
		t.Errorf("the session's calls ran in requests %v, want one", reqs)
	}
	// The third identical call with the same result is the session's loop.
	res, got := callText(t, cs, "up__echo", map[string]any{"text": "same"}, nil)
	if !res.IsError || !strings.Contains(got, "already ran 2 times") {
		t.Errorf("third identical call: isError %v, %q; want refused as a loop", res.IsError, got)
	}
	res, got = callText(t, cs, "up__slow", map[string]any{"text": "x"}, nil)
	if !res.IsError || !strings.Contains(got, "may not call up__slow") {
		t.Errorf("forbidden tool: isError %v, %q; want refused", res.IsError, got)
	}
}

// With auth, an SSE session is its opener's: another principal's POST to
// its endpoint is refused, and the opener's calls run as the opener.
func TestLegacySSEOwned(t *testing.T) {
	_, url, keys, _ := sessionGateway(t)
	c := mcp.NewClient(&mcp.Implementation{Name: "sse-client", Version: "1"}, nil)
	alice := &http.Client{Transport: keyTransport{"Authorization", "Bearer " + keys["alice@acme"]}}
	cs, err := c.Connect(context.Background(), &mcp.SSEClientTransport{Endpoint: url + "/sse", HTTPClient: alice}, nil)
	if err != nil {
		t.Fatalf("connect over SSE: %v", err)
	}
	defer cs.Close()
	if res, got := callText(t, cs, "get_order", map[string]any{"order_id": "1001"}, nil); res.IsError {
		t.Fatalf("alice's call: %q", got)
	}

	// A stream of alice's own, read up to its endpoint event.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/sse", nil)
	resp, err := alice.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	_, endpoint, ok := strings.Cut(string(buf[:n]), "data: ")
	if !ok {
		t.Fatalf("no endpoint event: %q", buf[:n])
	}
	endpoint = url + strings.TrimSpace(endpoint)
	post := func(key string) int {
		r, _ := http.NewRequest("POST", endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post(keys["bob@globex"]); got != http.StatusForbidden {
		t.Errorf("bob's POST to alice's SSE session: %d, want 403", got)
	}
	if got := post(keys["alice@globex"]); got != http.StatusForbidden {
		t.Errorf("alice of another tenant's POST: %d, want 403", got)
	}
	if got := post(keys["alice@acme"]); got != http.StatusAccepted {
		t.Errorf("alice's POST to her session: %d, want 202", got)
	}
}
