package gateway

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReachBehindReach puts a gateway in front of another (a team's reach
// before a company's, one process's tools served through another's): the
// outer one sends the inner one its call's frame and request in _meta, as
// it does to every upstream. The inner one knows neither, and must run the
// call in a request of that id (so that both graphs name one request)
// rather than refuse it as a client's mistake.
func TestReachBehindReach(t *testing.T) {
	inner, p, innerSrv := upstreamGateway(t, probeConfig)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: inner\n    url: "+innerSrv.URL+"/mcp\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	outer := newTestGateway(t, cfg)
	cs := connectMCP(t, outer, nil)

	res, text := callText(t, cs, "inner__up__echo", map[string]any{"text": "hi"}, nil)
	if res.IsError || !strings.Contains(text, "echo: hi") {
		t.Fatalf("inner__up__echo = %q (isError %v)", text, res.IsError)
	}
	request, _ := res.Meta[link.MetaRequest].(string)
	if request == "" {
		t.Fatalf("the outer gateway's result names no request: %v", res.Meta)
	}
	// The inner gateway ran the call in the outer one's request, under a
	// frame of its own, which it sent on to its upstream.
	m := p.lastMeta()
	if m[link.MetaRequest] != request {
		t.Errorf("the inner gateway's upstream got request %v, want the outer one's %s", m[link.MetaRequest], request)
	}
	if _, ok := inner.Runtime().Lookup(request); !ok {
		t.Errorf("the inner gateway keeps no request %s", request)
	}
	// Calls go on in it: a second one through the same chain.
	res, text = callText(t, cs, "inner__up__echo", map[string]any{"text": "again"}, nil)
	if res.IsError || !strings.Contains(text, "echo: again") {
		t.Fatalf("second call = %q (isError %v)", text, res.IsError)
	}
	// Stopping the request at the outer gateway ends its call in flight
	// at the inner one's upstream.
	outerSrv := serveTest(t, outer)
	done := make(chan string, 1)
	go func() {
		_, text := callText(t, cs, "inner__up__slow", map[string]any{"text": "long"}, mcp.Meta{link.MetaRequest: "job"})
		done <- text
	}()
	waitFor(t, p.started, "the inner gateway's upstream call to start")
	if status, out := do(t, "POST", outerSrv.URL+"/v1/requests/job/cancel", `{"mode":"cancel","reason":"runaway"}`, nil); status != 200 {
		t.Fatalf("cancel: %d %v", status, out)
	}
	waitFor(t, p.cancelled, "the inner gateway's upstream call to be cancelled")
	if text := <-done; !strings.Contains(text, "runaway") {
		t.Errorf("the client read %q, want the stop's reason", text)
	}

	// A request the inner gateway began for its own client still refuses
	// a parent it does not keep: a frame id mistyped, or another request's.
	direct := connectMCP(t, inner, nil)
	mine := mcp.Meta{link.MetaRequest: "mine"}
	if res, text := callText(t, direct, "up__echo", map[string]any{"text": "x"}, mine); res.IsError {
		t.Fatalf("a call naming a new request = %q", text)
	}
	mine[link.MetaParent] = "00000000000000ff"
	_, err = direct.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "y"}, Meta: mine})
	if err == nil || !strings.Contains(err.Error(), "no frame 00000000000000ff") {
		t.Errorf("an unknown parent in a request begun here: %v, want it refused", err)
	}
}
