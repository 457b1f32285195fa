package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStatelessProtocol: a client on the sessionless protocol (2026-07-28)
// lists and calls tools through reach over Streamable HTTP; its calls are
// guarded like any other (a refusal is an isError result), share one
// request per client, and take the lean path on both sides.
func TestStatelessProtocol(t *testing.T) {
	g, p, _ := upstreamGateway(t, probeConfig+"tools:\n  up__slow: {access: forbidden}\n")
	url := serveTest(t, g).URL + "/mcp"
	c := mcp.NewClient(&mcp.Implementation{Name: "stateless-client", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: http.DefaultClient},
		&mcp.ClientSessionOptions{ProtocolVersion: statelessProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != statelessProtocol {
		t.Fatalf("negotiated %q, want %q", v, statelessProtocol)
	}
	if cs.ID() != "" {
		t.Errorf("the sessionless protocol got a session id %q", cs.ID())
	}
	names := map[string]bool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names[tool.Name] = true
	}
	if !names["up__echo"] || names["up__slow"] {
		t.Errorf("tools/list = %v, want up__echo and not the forbidden up__slow", names)
	}
	var reqs []string
	for i, text := range []string{"one", "two"} {
		res, got := callText(t, cs, "up__echo", map[string]any{"text": text}, nil)
		if res.IsError || got != "echo: "+text {
			t.Fatalf("call %d: %q", i, got)
		}
		if si, _ := res.Meta[metaServerInfo].(map[string]any); si["name"] != "reach" {
			t.Errorf("result _meta %v, want the server's info", res.Meta)
		}
		id, _ := res.Meta[MetaRequest].(string)
		reqs = append(reqs, id)
		if m := p.lastMeta(); m[MetaParent] == nil || m[MetaRequest] != id {
			t.Errorf("the upstream got _meta %v, want the call's frame and request %s", m, id)
		}
	}
	if g.leanHits.Load() != 2 {
		t.Errorf("%d of 2 calls took the lean path", g.leanHits.Load())
	}
	if reqs[0] == "" || reqs[0] != reqs[1] {
		t.Errorf("requests of one sessionless client = %v, want one", reqs)
	}
	res, text := callText(t, cs, "up__slow", map[string]any{}, nil)
	if !res.IsError || !strings.Contains(text, "up__slow") {
		t.Errorf("a forbidden tool = %q (isError %v), want a refusal", text, res.IsError)
	}
}
