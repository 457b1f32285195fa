package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// syncBuffer is a bytes.Buffer safe for concurrent writers (a log).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// sessionGateway serves the examples with API keys for alice@acme,
// alice@globex and bob@globex, logging at debug level into logs.
func sessionGateway(t *testing.T) (g *Gateway, srvURL string, keys map[string]string, logs *syncBuffer) {
	t.Helper()
	dir := t.TempDir()
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys = map[string]string{}
	for name, spec := range map[string]auth.KeySpec{
		"alice@acme":   {Principal: "alice", Tenant: "acme"},
		"alice@globex": {Principal: "alice", Tenant: "globex"},
		"bob@globex":   {Principal: "bob", Tenant: "globex"},
	} {
		if keys[name], _, err = ks.Create(spec); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse([]byte("examples: true\ndata: "+dir+"\nauth: {keys: true}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	logs = &syncBuffer{}
	g, err = New(t.Context(), cfg, &Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, serveTest(t, g).URL, keys, logs
}

// keyTransport sends every request with an API key, in the header named.
type keyTransport struct{ header, value string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(k.header, k.value)
	return http.DefaultTransport.RoundTrip(r)
}

// onSession sends one request to /mcp as key, on session sid ("" for none),
// and returns the status and the body (of a stream: what came within a
// moment).
func onSession(t *testing.T, srvURL, key, method, sid, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, srvURL+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	req.Header.Set(mcpwire.HeaderProtocol, mcpwire.SessionProtocol)
	if sid != "" {
		req.Header.Set(mcpwire.HeaderSession, sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s /mcp: %v", method, err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && method == http.MethodGet {
		return resp.StatusCode, "(a stream)"
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMCPSessionBelongsToItsOwner: an MCP session over Streamable HTTP
// is its opener's, a principal in a tenant. Another principal, or the same
// principal name of another tenant, holding its Mcp-Session-Id may not
// call on it (the lean tools/call path or the SDK's), cancel its calls,
// open its stream or end it; the owner's session goes on. The session id
// is in no log line.
func TestMCPSessionBelongsToItsOwner(t *testing.T) {
	g, srvURL, keys, logs := sessionGateway(t)
	// The owner sends its key as Authorization (which the gateway sets
	// for the SDK's check and must give back, or the SDK path would not
	// know the owner) and as X-Reach-Key.
	for _, header := range []string{"Authorization", "X-Reach-Key"} {
		t.Run(header, func(t *testing.T) {
			value := keys["alice@acme"]
			if header == "Authorization" {
				value = "Bearer " + value
			}
			c := mcp.NewClient(&mcp.Implementation{Name: "owner", Version: "1"}, nil)
			cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srvURL + "/mcp",
				HTTPClient: &http.Client{Transport: keyTransport{header, value}}}, &mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			sid := cs.ID()
			if sid == "" {
				t.Fatal("no session id")
			}
			owned, _ := callText(t, cs, "search_kb", map[string]any{"query": "acme"}, nil)
			if owned.IsError {
				t.Fatalf("the owner's call: %+v", owned)
			}
			hits := g.front.FastCalls()
			for _, who := range []string{"alice@globex", "bob@globex"} {
				for _, c := range []struct{ what, method, body string }{
					{"a tools/call (lean)", "POST", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_kb","arguments":{"query":"from ` + who + `"}}}`},
					{"a tools/call with progress (SDK)", "POST", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"search_kb","arguments":{"query":"from ` + who + `"},"_meta":{"progressToken":"p"}}}`},
					{"tools/list (SDK)", "POST", `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`},
					{"notifications/cancelled", "POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"x"}}`},
					{"the stream (GET)", "GET", ""},
					{"the end (DELETE)", "DELETE", ""},
				} {
					status, body := onSession(t, srvURL, keys[who], c.method, sid, c.body)
					if status != http.StatusForbidden || !strings.Contains(body, "not_your_session") {
						t.Errorf("%s: %s on alice@acme's session = %d %s, want 403 not_your_session", who, c.what, status, clip(body, 300))
					}
				}
			}
			if n := g.front.FastCalls(); n != hits {
				t.Errorf("the lean path answered %d calls of others on the session", n-hits)
			}
			for _, r := range g.rt.Requests() {
				for _, f := range r.Frames() {
					if strings.Contains(string(f.Args), "from ") {
						t.Errorf("a call of another principal ran in request %s: %s", r.ID(), f.Args)
					}
				}
			}
			// The owner's session is whole: a call (lean) and a list (SDK,
			// which sees who the owner is).
			res, text := callText(t, cs, "search_kb", map[string]any{"query": "still mine"}, nil)
			if res.IsError || res.Meta[link.MetaRequest] != owned.Meta[link.MetaRequest] {
				t.Errorf("the owner's call after the others' attempts = %q in request %v, want a result in %v", text, res.Meta[link.MetaRequest], owned.Meta[link.MetaRequest])
			}
			lr, err := cs.ListTools(t.Context(), nil)
			if err != nil || len(lr.Tools) == 0 {
				t.Errorf("the owner's tools/list = %v, %v; want the tools it may call", lr, err)
			}
			if status, body := onSession(t, srvURL, keys["alice@acme"], "DELETE", sid, ""); status != http.StatusNoContent {
				t.Errorf("the owner ending its session = %d %s, want 204", status, body)
			}
			if strings.Contains(logs.String(), sid) {
				t.Errorf("the log holds the session id %s", sid)
			}
		})
	}
	if !strings.Contains(logs.String(), "session_id=#") {
		t.Errorf("the log does not tell sessions apart (no hashed session_id):\n%s", clip(logs.String(), 2000))
	}
}

// TestSessionlessClientsOfTwoTenants: on the sessionless protocol, the
// same principal name and clientInfo in two tenants are two clients, each
// in its own request, on the lean path and through the SDK.
func TestSessionlessClientsOfTwoTenants(t *testing.T) {
	_, srvURL, keys, _ := sessionGateway(t)
	for _, progress := range []bool{false, true} {
		reqs := map[string]string{}
		for i, who := range []string{"alice@acme", "alice@globex", "alice@acme", "bob@globex"} {
			meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"shared","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}`
			if progress {
				meta += `,"progressToken":"p"`
			}
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_kb","arguments":{"query":"q` + strconv.Itoa(i) + `"},"_meta":{` + meta + `}}}`
			req, _ := http.NewRequest(http.MethodPost, srvURL+"/mcp", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+keys[who])
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set(mcpwire.HeaderProtocol, mcpwire.StatelessProtocol)
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "search_kb")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if i := bytes.Index(data, []byte("data: ")); i >= 0 { // an SSE answer
				data = bytes.TrimSpace(data[i+len("data: "):])
			}
			var msg struct {
				Result *mcp.CallToolResult `json:"result"`
				Error  any                 `json:"error"`
			}
			if err := json.Unmarshal(data, &msg); err != nil || msg.Result == nil || msg.Result.IsError {
				t.Fatalf("progress %v: %s's call = %d %s", progress, who, resp.StatusCode, data)
			}
			id, _ := msg.Result.Meta[link.MetaRequest].(string)
			if prev, ok := reqs[who]; ok && prev != id {
				t.Errorf("progress %v: %s's calls ran in requests %s and %s, want one", progress, who, prev, id)
			}
			reqs[who] = id
		}
		if reqs["alice@acme"] == reqs["alice@globex"] || reqs["alice@globex"] == reqs["bob@globex"] {
			t.Errorf("progress %v: requests %v, want one per principal and tenant", progress, reqs)
		}
	}
}
