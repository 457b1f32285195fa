package gateway

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
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
		&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.StatelessProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != mcpwire.StatelessProtocol {
		t.Fatalf("negotiated %q, want %q", v, mcpwire.StatelessProtocol)
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
		if si, _ := res.Meta["io.modelcontextprotocol/serverInfo"].(map[string]any); si["name"] != "reach" {
			t.Errorf("result _meta %v, want the server's info", res.Meta)
		}
		id, _ := res.Meta[link.MetaRequest].(string)
		reqs = append(reqs, id)
		if m := p.lastMeta(); m[link.MetaParent] == nil || m[link.MetaRequest] != id {
			t.Errorf("the upstream got _meta %v, want the call's frame and request %s", m, id)
		}
	}
	if g.front.FastCalls() != 2 {
		t.Errorf("%d of 2 calls took the lean path", g.front.FastCalls())
	}
	if reqs[0] == "" || reqs[0] != reqs[1] {
		t.Errorf("requests of one sessionless client = %v, want one", reqs)
	}
	res, text := callText(t, cs, "up__slow", map[string]any{}, nil)
	if !res.IsError || !strings.Contains(text, "up__slow") {
		t.Errorf("a forbidden tool = %q (isError %v), want a refusal", text, res.IsError)
	}
}

// TestStatelessLeanDefersToSDK: a sessionless tools/call whose Mcp-Name
// header names another tool than its body, or that lacks the client's
// capabilities, is not run by the lean path; the SDK refuses it (400).
func TestStatelessLeanDefersToSDK(t *testing.T) {
	g, p, _ := upstreamGateway(t, probeConfig)
	url := serveTest(t, g).URL + "/mcp"
	post := func(header, meta string) int {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"x"},"_meta":{` + meta + `}}}`
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcpwire.HeaderProtocol, mcpwire.StatelessProtocol)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	good := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}`
	if code := post("up__echo", good); code != http.StatusOK || g.front.FastCalls() != 1 {
		t.Fatalf("a well-formed sessionless call: status %d, lean hits %d", code, g.front.FastCalls())
	}
	ran := len(p.metas)
	if code := post("up__slow", good); code != http.StatusBadRequest {
		t.Errorf("Mcp-Name up__slow for a call of up__echo: status %d, want 400", code)
	}
	noCaps := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}`
	if code := post("up__echo", noCaps); code != http.StatusBadRequest {
		t.Errorf("no client capabilities: status %d, want 400", code)
	}
	if len(p.metas) != ran || g.front.FastCalls() != 1 {
		t.Errorf("a refused call ran (upstream calls %d -> %d, lean hits %d)", ran, len(p.metas), g.front.FastCalls())
	}
}

// TestSessionlessClientsAreForgotten: the state kept per sessionless
// client (principal and clientInfo) goes when its request ends, so a
// client that names itself anew for every call does not grow the
// gateway's memory.
func TestSessionlessClientsAreForgotten(t *testing.T) {
	g, _, _ := upstreamGateway(t, probeConfig+"idle_gap: 30ms\n")
	url := serveTest(t, g).URL + "/mcp"
	clients := g.front.Clients
	for i := range 50 {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"x"},"_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"client-` + strconv.Itoa(i) + `","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcpwire.HeaderProtocol, mcpwire.StatelessProtocol)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "up__echo")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: status %d", i, resp.StatusCode)
		}
	}
	if n := clients(); n == 0 {
		t.Fatal("no sessionless client was kept at all")
	}
	for deadline := time.Now().Add(time.Minute); clients() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessionless clients still kept after their requests ended", clients())
		}
	}
}
