package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLinkUnderAnyFrame: a call naming a model frame (not a running tool
// call) as its parent nests under it, over the API and over MCP.
func TestLinkUnderAnyFrame(t *testing.T) {
	g := newTestGateway(t, nil)
	srv := serveTest(t, g)
	do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"r","tool_calls":[{"call_id":"f","tool":"format_answer","arguments":{"text":"refunds"}}]}`, nil)
	r, ok := g.rt.Lookup("r")
	if !ok {
		t.Fatal("request r is not kept")
	}
	var model *reach.Frame
	for _, f := range r.Frames() {
		if f.Kind == reach.ModelFrame {
			model = f
		}
	}
	if model == nil {
		t.Fatal("no model frame in request r")
	}
	status, out := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"late","tool":"search_kb","arguments":{"query":"late"}}]}`,
		map[string]string{"Reach-Parent": model.ID.String()})
	if status != 200 || path(out, "request_id") != "r" {
		t.Fatalf("linked call = %d %v, want request r", status, out)
	}
	cs := connectMCP(t, g, nil)
	if res, text := callText(t, cs, "search_kb", map[string]any{"query": "mcp"}, mcp.Meta{link.MetaParent: model.ID.String()}); res.IsError {
		t.Fatalf("MCP linked call: %s", text)
	}
	var n int
	for _, f := range r.Frames() {
		if f.CallID == "late" || (f.Name == "search_kb" && strings.HasPrefix(f.CallID, "mcp_")) {
			n++
			if f.Parent != model || f.Depth != model.Depth+1 {
				t.Errorf("frame %s parent=%v depth=%d, want the model frame %s, depth %d", f.CallID, f.Parent, f.Depth, model.ID, model.Depth+1)
			}
		}
	}
	if n != 2 {
		t.Errorf("found %d linked frames in request r, want 2", n)
	}
	// A parent in another request than the one named is a conflict.
	status, out = do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"other","tool_calls":[{"call_id":"x","tool":"search_kb","arguments":{"query":"x"}}]}`,
		map[string]string{"Reach-Parent": model.ID.String()})
	if status != 409 {
		t.Errorf("parent in another request = %d %v, want 409", status, out)
	}
}

// TestUpstreamDroppedToolIsUnregistered: a tool the upstream stops listing
// leaves the runtime and tools/list; calling it is an unknown tool.
func TestUpstreamDroppedToolIsUnregistered(t *testing.T) {
	g, p, _ := upstreamGateway(t, probeConfig)
	cs := connectMCP(t, g, nil)
	if _, ok := g.rt.Tool("up__echo"); !ok {
		t.Fatal("up__echo is not registered")
	}
	p.server.RemoveTools("echo")
	deadline := time.Now().Add(time.Minute)
	for {
		if _, ok := g.rt.Tool("up__echo"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("up__echo is still registered a minute after the upstream dropped it")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, ok := g.rt.Tool("up__add"); !ok {
		t.Error("up__add left with up__echo")
	}
	// tools/list follows once the gateway has synced its MCP listing.
	waitUntil(t, "tools/list to drop up__echo", func() bool { return !strings.Contains(toolNames(t, cs), "up__echo") })
	_, text := callText(t, cs, "up__echo", map[string]any{"text": "x"}, nil)
	if !strings.Contains(text, "no tool named") {
		t.Errorf("calling the dropped tool = %s, want an unknown-tool refusal", text)
	}
}
