package gateway

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFrameworksShapedOutputSchema: a tool whose results reach reshapes
// (its shape: selects fields or flattens) is listed without the upstream's
// output schema, which its results no longer match. The TypeScript SDK's
// clients check a result against the schema a tool lists and throw when it
// does not match, so a listed schema made every call of such a tool an
// error thrown at the application ("Structured content does not match the
// tool's output schema"), its result lost; without it, the client takes
// the shaped result. A tool shaped otherwise keeps its schema; a result of
// it cut to text (its max_bytes, or the runtime's), which matches no
// schema of an object, is answered with isError, the cut text and reach's
// note in it: before, the client threw "has an output schema but did not
// return structured content", and the note telling the model to narrow its
// query was lost.
func TestFrameworksShapedOutputSchema(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@modelcontextprotocol/sdk", "@modelcontextprotocol/client")
	src, err := os.ReadFile("testdata/frameworks/shaped-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "reach-shaped-client", src)
	for _, tc := range []struct {
		name, shape string
		schema      bool   // the listing keeps the output schema
		isError     bool   // the result is answered with isError
		text        string // what the result's text holds
	}{
		{"fields", "{fields: [total]}", false, false, "{}"},
		{"flatten", "{flatten: true}", false, false, `"sum":5`},
		{"max_bytes", "{max_bytes: 1000}", true, false, `"sum":5`},
		// Cut to text, which no structured result can be: an error the
		// client takes as the tool's, with the cut text and the note.
		{"cut", "{max_bytes: 8}", true, true, "Narrow your query"},
		// No shape: the runtime's 32 KiB cuts up__big's 40 KiB.
		{"default_cut", "", true, true, "Narrow your query"},
	} {
		for _, which := range []string{"sdk1", "client"} {
			t.Run(tc.name+"/"+which, func(t *testing.T) {
				tool, cfg := "up__add", probeConfig+"tools:\n  up__add: {shape: "+tc.shape+"}\n"
				if tc.shape == "" {
					tool, cfg = "up__big", probeConfig
				}
				srv := bigUpstreamGateway(t, cfg)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				out, err := exec.CommandContext(ctx, node, script, which, srv.URL+"/mcp", tool).CombinedOutput()
				if err != nil {
					t.Fatalf("shaped-client: %v\n%s", err, out)
				}
				lines := strings.Split(strings.TrimSpace(string(out)), "\n")
				var got map[string]any
				if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
					t.Fatalf("shaped-client printed %s", out)
				}
				if got["error"] != nil {
					t.Fatalf("shaped-client: %v", got["error"])
				}
				if has := path(got, "tool", "outputSchema") != nil; has != tc.schema {
					t.Errorf("%s listed with an output schema: %v, want %v (tool %v)", tool, has, tc.schema, got["tool"])
				}
				r, _ := got["add"].(map[string]any)
				if r == nil || r["thrown"] != nil || (r["isError"] == true) != tc.isError {
					t.Fatalf("%s = %.300v, want its shaped result, isError %v", tool, got["add"], tc.isError)
				}
				if s, _ := path(r, "content", 0, "text").(string); !strings.Contains(s, tc.text) {
					t.Errorf("%s's text = %.300q, want %s in it", tool, s, tc.text)
				}
			})
		}
	}
}

// bigUpstreamGateway is upstreamGateway whose probe has one tool more, big:
// a structured result of 40 KiB, with its output schema.
func bigUpstreamGateway(t *testing.T, cfgYAML string) *httptest.Server {
	t.Helper()
	p := newUpstreamProbe()
	type bigOut struct {
		Text string `json:"text"`
	}
	mcp.AddTool(p.server, &mcp.Tool{Name: "big", Description: "A large result.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, bigOut, error) {
			return nil, bigOut{Text: strings.Repeat("word ", 8<<10)}, nil
		})
	up := serveUpstream(t, p)
	cfg, err := config.Parse([]byte(strings.ReplaceAll(cfgYAML, "UPSTREAM_URL", up.URL)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTest(t, newTestGateway(t, cfg))
	p.gateway = srv.URL
	return srv
}
