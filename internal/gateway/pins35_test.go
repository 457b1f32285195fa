package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPins35MirrorPinsInOneWrite: an upstream offering many tools,
// resources, a resource template and a prompt, none pinned yet: the
// gateway mirrors them at startup, pins every one (each listed, none
// held), and the pins are stored in two writes, one for the tools, one
// for the rest (the pins' version moves on twice). Before, each was a
// write of its own: with the pins file every one rewrote the whole file
// (quadratic in the resources), in the store each was a transaction.
func TestPins35MirrorPinsInOneWrite(t *testing.T) {
	const n, tools = 120, 30
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	for i := range tools {
		mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("t%02d", i), Description: fmt.Sprintf("Tool %d.", i)},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
	}
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "text"}}}, nil
	}
	for i := range n {
		s.AddResource(&mcp.Resource{URI: fmt.Sprintf("doc://r%03d", i), Name: fmt.Sprintf("r%03d", i), Description: fmt.Sprintf("Document %d.", i)}, read)
	}
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "doc://pages/{n}", Name: "pages", Description: "Pages."}, read)
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greets someone."}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("data: "+t.TempDir()+"\nupstreams:\n  - {name: docs, url: '"+up.URL+"'}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	cs := connectMCP(t, g, nil)
	got := strings.Split(listed(t, cs), ";")
	if len(got) != 3 || len(strings.Split(got[0], ",")) != n || got[1] != "doc://pages/{n}" || got[2] != "docs__greet" {
		t.Fatalf("listings: %q, want the %d resources, the template and the prompt", got, n)
	}
	listedTools := 0
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(tool.Name, "docs__t") {
			listedTools++
		}
	}
	if listedTools != tools {
		t.Fatalf("%d of the upstream's tools listed, want its %d", listedTools, tools)
	}
	pins, err := g.pins.List(false)
	if err != nil || len(pins) != tools+n+2 {
		t.Fatalf("pins: %d %v, want %d", len(pins), err, tools+n+2)
	}
	v, err := g.store.PinsVersion(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if v != 2 {
		t.Errorf("the pins' version after pinning %d new tools, %d resources, a template and a prompt: %d, want 2 (one write for the tools, one for the rest)", tools, n, v)
	}
}
