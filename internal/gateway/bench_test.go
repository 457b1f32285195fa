package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchUpstream is a Go MCP server with one read tool, served over
// Streamable HTTP on loopback.
func benchUpstream(b *testing.B) *httptest.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	b.Cleanup(srv.Close)
	return srv
}

func benchClient(b *testing.B, url, protocol string) *mcp.ClientSession {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench-client", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// BenchmarkGatewayToolsCall measures one MCP tools/call over loopback HTTP,
// through reach and directly to the same Go upstream, interleaved in one
// run, and reports each median and their ratio (the quality bar: at most
// 1.3). Every call has new arguments, so the loop guard has nothing to
// refuse; the request's budget is unlimited. Both clients are the go-sdk's
// with its defaults (they negotiate a session, protocol 2025-11-25).
//
//	go test -run '^$' -bench GatewayToolsCall -benchtime 3000x ./internal/gateway/
func BenchmarkGatewayToolsCall(b *testing.B) {
	up := benchUpstream(b)
	cfg := &Config{
		Upstreams: []Upstream{{Name: "up", URL: up.URL}},
		Budgets:   map[string]BudgetConfig{"default": {}},
	}
	g, err := New(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	gw := httptest.NewServer(g.Handler())
	b.Cleanup(gw.Close)

	direct := benchClient(b, up.URL, "")
	viaReach := benchClient(b, gw.URL+"/mcp", "")
	ctx := context.Background()
	call := func(cs *mcp.ClientSession, name string, i int) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "call " + strconv.Itoa(i)}})
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", name, err, res)
		}
		return d
	}
	for i := range 50 { // warm up connections and caches
		call(direct, "echo", i)
		call(viaReach, "up__echo", i)
	}
	var ds, rs []time.Duration
	i := 0
	for b.Loop() {
		ds = append(ds, call(direct, "echo", i))
		rs = append(rs, call(viaReach, "up__echo", i))
		i++
	}
	md, mr := median(ds), median(rs)
	b.ReportMetric(float64(md.Microseconds()), "direct-µs")
	b.ReportMetric(float64(mr.Microseconds()), "reach-µs")
	b.ReportMetric(float64(mr)/float64(md), "ratio")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
