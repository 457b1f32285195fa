package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestArgumentInAnotherCaseRefused: a member that is no property of the
// tool's schema but is one spelled in another case ("PATH" for "path", at
// the top or nested) is refused before the upstream is called, an MCP
// result with isError naming the property to use, whatever the schema's
// additionalProperties: the upstream, a Go server that decodes its
// arguments with encoding/json, read it as the property, which reach's
// checks and policies, reading "path", never saw.
func TestArgumentInAnotherCaseRefused(t *testing.T) {
	var ran atomic.Int32
	s := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	for _, tc := range []struct{ name, schema string }{
		{"read_file", `{"type":"object","properties":{"path":{"type":"string"},"opts":{"type":"object","properties":{"mode":{"type":"string"}}}}}`},
		{"read_closed", `{"type":"object","properties":{"path":{"type":"string"}},"additionalProperties":false}`},
	} {
		s.AddTool(&mcp.Tool{Name: tc.name, InputSchema: json.RawMessage(tc.schema), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				ran.Add(1)
				var in struct {
					Path string `json:"path"`
					Opts struct {
						Mode string `json:"mode"`
					} `json:"opts"`
				}
				if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
					return nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "read " + in.Path + " " + in.Opts.Mode}}}, nil
			})
	}
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: fs\n    url: "+up.URL+"\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTest(t, newTestGateway(t, cfg))
	cs, err := mcpAs(t, srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string // the property the refusal names
	}{
		{"fs__read_file", map[string]any{"PATH": "/etc/shadow"}, `"path"`},
		{"fs__read_file", map[string]any{"Path": "/etc/shadow"}, `"path"`},
		{"fs__read_file", map[string]any{"path": "/tmp/ok", "opts": map[string]any{"MODE": "w"}}, `"mode"`},
		{"fs__read_closed", map[string]any{"PATH": "/etc/shadow"}, `"path"`},
	} {
		res, text := callText(t, cs, tc.tool, tc.args, nil)
		if !res.IsError || !strings.Contains(text, "Spell it "+tc.want) {
			t.Errorf("%s %v = %q (isError %v), want a refusal naming %s", tc.tool, tc.args, text, res.IsError, tc.want)
		}
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the upstream ran %d refused calls", n)
	}
	if res, text := callText(t, cs, "fs__read_file", map[string]any{"path": "/tmp/ok", "opts": map[string]any{"mode": "r"}}, nil); res.IsError || text != "read /tmp/ok r" {
		t.Errorf("the call spelled as the schema = %q (isError %v)", text, res.IsError)
	}
}
