package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCredentialNamesMaskedServed: values no one registered, sent under
// names that say a credential (a subscription key header, X-Auth-Key,
// x-functions-key, a JWT, a signing key, a passcode), are masked by their
// names in what the model gets back from a tool that echoes them, in the
// audit log, in the request API, in the graph, in the UI and in a log
// line, as an upstream's error quoting them too; a data key beside them
// (primary_key, issueKey) is shown.
func TestCredentialNamesMaskedServed(t *testing.T) {
	creds := map[string]string{
		"Ocp-Apim-Subscription-Key": "c0ffee-subscription-4411",
		"X-Auth-Key":                "c0ffee-authkey-5522",
		"x-functions-key":           "c0ffee-functions-6633",
		"jwt":                       "eyJc0ffee.jwt-7744",
		"signingKey":                "c0ffee-signing-8855",
		"admin_passcode":            "c0ffee-passcode-9966",
	}
	plain := map[string]string{"primary_key": "row-31337", "issueKey": "PROJ-4242"}

	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
			return nil, in, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
			var b strings.Builder
			for k, v := range in {
				fmt.Fprintf(&b, "%s: %v\n", k, v)
			}
			return nil, nil, fmt.Errorf("the service refused the request with\n%s", b.String())
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "reach.yaml")
	os.WriteFile(cfgPath, []byte("data: data\nupstreams:\n  - name: up\n    url: "+up.URL+"\n"), 0o600)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var logBuf lockedBuffer
	g, err := New(context.Background(), cfg, &Options{Logger: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	cs := connectMCP(t, g, nil)

	args := map[string]any{}
	for k, v := range creds {
		args[k] = v
	}
	for k, v := range plain {
		args[k] = v
	}
	surfaces := map[string]string{}
	res, text := callText(t, cs, "up__echo", args, mcp.Meta{link.MetaRequest: "credname"})
	b, _ := json.Marshal(res)
	surfaces["MCP result"] = string(b) + text
	res, text = callText(t, cs, "up__fail", args, mcp.Meta{link.MetaRequest: "credname"})
	if !res.IsError {
		t.Fatalf("the failing tool answered %s, want an error", text)
	}
	b, _ = json.Marshal(res)
	surfaces["MCP error"] = string(b) + text
	surfaces["request"] = getBody(t, g, "/v1/requests/credname")
	surfaces["graph json"] = getBody(t, g, "/v1/requests/credname/graph?format=json")
	surfaces["UI"] = getBody(t, g, "/ui/requests/credname")
	surfaces["audit log"] = auditOf(t, g, "credname") // flushed: every event of the calls is stored
	// No call above logs its arguments; a line that did, as attributes or
	// quoted in its message, goes through the gateway's logger so.
	var attrs []any
	for k, v := range args {
		attrs = append(attrs, k, v)
	}
	g.log.Warn("an upstream said: "+text, attrs...)
	surfaces["log"] = logBuf.String()

	for where, s := range surfaces {
		for name, v := range creds {
			if strings.Contains(s, v) {
				t.Errorf("%s shows %s's value %q:\n%s", where, name, v, s)
			}
		}
	}
	// The masking is by name, not by losing the arguments: the data keys
	// are shown where the arguments are.
	for _, where := range []string{"MCP result", "request", "audit log", "log"} {
		for name, v := range plain {
			if !strings.Contains(surfaces[where], v) {
				t.Errorf("%s does not show %s's value %q:\n%s", where, name, v, surfaces[where])
			}
		}
	}
}
