package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestKeepsWhatTheUpstreamSent: over an HTTP upstream (the lean client),
// a client gets the upstream's content blocks and structuredContent as
// they were, with secrets masked in both; the HTTP API still answers with
// reach's data.
func TestKeepsWhatTheUpstreamSent(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	t.Setenv("UP_TOKEN", secret)
	// An upstream whose answer has two text blocks that are not its
	// structured content's JSON, as server-filesystem's are.
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	type out struct {
		Count int `json:"count"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "count", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, out, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "5 apples"}, &mcp.TextContent{Text: "(counted " + secret + ")"}}}, out{Count: 5}, nil
		})
	notes := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(notes.Close)
	g, _, srv := upstreamGateway(t, "upstreams:\n  - name: up\n    url: UPSTREAM_URL\n    headers: {Authorization: \"Bearer ${UP_TOKEN}\"}\n  - name: notes\n    url: "+notes.URL+"\n")
	t.Cleanup(func() { g.Close() }) // before the upstreams close
	cs := connectMCP(t, g, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "notes__count", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("notes__count: %v %+v", err, res)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	content, _ := json.Marshal(res.Content)
	if string(sc) != `{"count":5}` || !strings.HasPrefix(string(content), `[{"type":"text","text":"5 apples"},{"type":"text","text":"(counted `) || strings.Contains(string(content), secret) {
		t.Errorf("notes__count: content %s, structuredContent %s; want the two text blocks (the secret masked) and {\"count\":5}", content, sc)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "the key is " + secret}})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("up__echo: %v %+v", err, res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if strings.Contains(text, secret) || !strings.HasPrefix(text, "echo: the key is ") {
		t.Errorf("up__echo's text block = %q, want the upstream's text with the secret masked", text)
	}
	_, got := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"notes__count","arguments":{}}]}`, nil)
	if d, _ := json.Marshal(path(got, "results", 0, "data")); string(d) != `{"count":5}` {
		t.Errorf("/v1/calls data = %s, want {\"count\":5}", d)
	}
}
