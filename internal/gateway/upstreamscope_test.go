package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUpstreamScopeWhateverThePrefix: a policy scoped to an upstream
// (resource in Reach::Upstream::"docs") applies to its tools as to its
// resources, whatever prefix its tools' names carry (the default docs__,
// none, or another): on every path a tool is listed or called by, the
// listing (tools/list), a call on the session protocol's fast lane, on the
// sessionless one, one through the SDK (it asks for progress), and one
// through the API (/v1/calls). Before, a tool was a member of the upstream
// its name's prefix spelled: with prefix "" of none, with prefix d__ of
// "d", so a forbid of docs left its tools open while it closed its
// resources (and a policy scoped to "d" reached them instead).
func TestUpstreamScopeWhateverThePrefix(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "search", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil, nil
		})
	s.AddResource(&mcp.Resource{URI: "doc://a", Name: "a"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "a"}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	const closed = `
@id("docs-closed")
@reason("docs is closed")
forbid (principal, action, resource in Reach::Upstream::"docs");
`
	for _, tc := range []struct{ name, prefix, tool string }{
		{"the default prefix", "", "docs__search"},
		{"no prefix", `, prefix: ""`, "search"},
		{"prefix d__", `, prefix: d__`, "d__search"},
		{"prefix kb_", `, prefix: kb_`, "kb_search"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pol := filepath.Join(dir, "policy.cedar")
			if err := os.WriteFile(pol, append(policy.DefaultSource(), closed...), 0o600); err != nil {
				t.Fatal(err)
			}
			ks, err := auth.OpenKeys(auth.KeysPath(dir))
			if err != nil {
				t.Fatal(err)
			}
			key, _, err := ks.Create(auth.KeySpec{Principal: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse([]byte("data: "+dir+"\nauth: {keys: true}\npolicy: {path: "+pol+"}\n"+
				"upstreams:\n  - {name: docs, url: '"+up.URL+"'"+tc.prefix+"}\n"), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			url := serveTest(t, newTestGateway(t, cfg)).URL
			ctx := t.Context()
			sessionless, err := mcpAs(t, url, key)
			if err != nil {
				t.Fatal(err)
			}
			session := sessionAs(t, url, key)
			// The resource: refused (the same before).
			var je *jsonrpc.Error
			if _, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doc://a"}); !errors.As(err, &je) || !strings.Contains(je.Message, "docs is closed") {
				t.Errorf("resources/read of doc://a: %v; want refused, docs is closed", err)
			}
			if got := toolNames(t, session); strings.Contains(got, "search") {
				t.Errorf("tools/list: %s; want %s left out", got, tc.tool)
			}
			called := func(path string, cs *mcp.ClientSession, params *mcp.CallToolParams) {
				t.Helper()
				res, err := cs.CallTool(ctx, params)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				text := ""
				if len(res.Content) > 0 {
					text = res.Content[0].(*mcp.TextContent).Text
				}
				if !res.IsError || !strings.Contains(text, "docs is closed") {
					t.Errorf("%s of %s: isError %v, %q; want refused, docs is closed", path, tc.tool, res.IsError, text)
				}
			}
			called("tools/call on the session's fast lane", session, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
			called("tools/call sessionless", sessionless, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
			withProgress := &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}}
			withProgress.SetProgressToken("p1")
			called("tools/call through the SDK", session, withProgress)
			_, out := do(t, "POST", url+"/v1/calls", `{"request_id":"r-api","tool_calls":[{"call_id":"c1","tool":"`+tc.tool+`","arguments":{}}]}`,
				map[string]string{"Authorization": "Bearer " + key})
			if st := path(out, "results", 0, "status"); st == "success" || !strings.Contains(fmt.Sprint(out), "docs is closed") {
				t.Errorf("/v1/calls of %s: %v; want refused, docs is closed", tc.tool, out)
			}
		})
	}
}
