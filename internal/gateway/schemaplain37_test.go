package gateway

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream tool that lists an output schema but answers a success in
// text alone is passed on as a success, whatever note reach adds (here a
// replay's): not turned into an error (only a result reach cut to text, with its
// note, is: TestFrameworksShapedOutputSchema), so the model does not take
// a write that succeeded for one that failed.
func TestSchemaToolsPlainSuccessPassedOn(t *testing.T) {
	p := newUpstreamProbe()
	p.server.AddTool(&mcp.Tool{Name: "plain", Description: "Says it is done, in words.",
		InputSchema:  json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done: the row is written"}}}, nil
		})
	up := serveUpstream(t, p)
	cfg, err := config.Parse([]byte(strings.ReplaceAll(probeConfig, "UPSTREAM_URL", up.URL)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTest(t, newTestGateway(t, cfg))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "plain-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// The second call with the key is a replay, with reach's note that
	// nothing ran again: a success still, not a failed write to retry.
	for _, call := range []string{"first", "replayed"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__plain", Arguments: map[string]any{},
			Meta: mcp.Meta{"reach/idempotency_key": "plain-1"}})
		if err != nil {
			t.Fatal(err)
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if res.IsError || !strings.Contains(text, "done: the row is written") {
			t.Errorf("up__plain, %s = isError %v, %q; want the upstream's success", call, res.IsError, text)
		}
	}
}

// A write whose structured result reach cut to text is answered with
// isError and the note, and so is its replay under the same idempotency
// key (the note is recorded with the result): before, the replay was a
// success without structured content, which the SDK clients throw away.
func TestSchemaToolsCutReplayedAsCut(t *testing.T) {
	p := newUpstreamProbe()
	type bigOut struct {
		Text string `json:"text"`
	}
	var runs atomic.Int64
	mcp.AddTool(p.server, &mcp.Tool{Name: "bigw", Description: "Writes, and answers a large result."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, bigOut, error) {
			runs.Add(1)
			return nil, bigOut{Text: strings.Repeat("word ", 8<<10)}, nil
		})
	up := serveUpstream(t, p)
	cfg, err := config.Parse([]byte(strings.ReplaceAll(probeConfig, "UPSTREAM_URL", up.URL)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTest(t, newTestGateway(t, cfg))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "cut-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, call := range []string{"first", "replayed"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__bigw", Arguments: map[string]any{},
			Meta: mcp.Meta{"reach/idempotency_key": "bigw-1"}})
		if err != nil {
			t.Fatal(err)
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if !res.IsError || res.StructuredContent != nil || !strings.Contains(text, "Narrow your query") {
			t.Errorf("up__bigw, %s = isError %v, structured %v, %.120q...; want isError with the cut text and the note", call, res.IsError, res.StructuredContent != nil, text)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the write ran %d times, want once", n)
	}
}
