package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nullUpstream is a hostile MCP upstream over Streamable HTTP whose
// answers hold nulls where the protocol has objects: in its listings of
// tools, resources, templates and prompts, a result's content, a prompt's
// messages, a resource's contents.
type nullUpstream struct{ whole bool } // whole: a call's, a get's and a read's result is null

func (n nullUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(b, &m)
	answer := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
	}
	switch {
	case m.Method == "initialize":
		answer(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"resources":{},"prompts":{}},"serverInfo":{"name":"nulls","version":"1"}}`)
		return
	case n.whole && (m.Method == "tools/call" || m.Method == "prompts/get" || m.Method == "resources/read"):
		answer(`null`)
		return
	}
	switch m.Method {
	case "initialize":
		answer(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"resources":{},"prompts":{}},"serverInfo":{"name":"nulls","version":"1"}}`)
	case "tools/list":
		answer(`{"tools":[null,{"name":"ok","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`)
	case "resources/list":
		answer(`{"resources":[null,{"uri":"file:///a","name":"a"}]}`)
	case "resources/templates/list":
		answer(`{"resourceTemplates":[null,{"uriTemplate":"file:///{x}","name":"t"}]}`)
	case "prompts/list":
		answer(`{"prompts":[null,{"name":"p","arguments":[null,{"name":"a"}]}]}`)
	case "prompts/get":
		answer(`{"messages":[null,{"role":"user","content":{"type":"text","text":"hi"}}]}`)
	case "resources/read":
		answer(`{"contents":[null,{"uri":"file:///a","text":"x"}]}`)
	case "tools/call":
		answer(`{"content":[null,{"type":"text","text":"done"}]}`)
	default: // notifications
		w.WriteHeader(http.StatusAccepted)
	}
}

// TestAttack25NullsFromUpstream: an upstream whose answers hold nulls in
// their lists does not crash the gateway: its tools, resources and prompts
// are listed without the nulls, and a call, a read and a get are answered.
func TestAttack25NullsFromUpstream(t *testing.T) {
	for _, whole := range []bool{false, true} {
		t.Run(fmt.Sprint("whole=", whole), func(t *testing.T) { testNulls(t, whole) })
	}
}

func testNulls(t *testing.T, whole bool) {
	up := httptest.NewServer(nullUpstream{whole})
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: nulls\n    url: "+up.URL+"\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "nulls__ok" {
		t.Fatalf("tools: %v %v", tools, err)
	}
	res, text := callText(t, cs, "nulls__ok", map[string]any{}, nil)
	if !whole && (res.IsError || text != "done") {
		t.Errorf("the call answered %v %q, want done", res.IsError, text)
	}
	rs, err := cs.ListResources(t.Context(), nil)
	if err != nil || len(rs.Resources) != 1 {
		t.Fatalf("resources: %v %v", rs, err)
	}
	ts, err := cs.ListResourceTemplates(t.Context(), nil)
	if err != nil || len(ts.ResourceTemplates) != 1 {
		t.Fatalf("templates: %v %v", ts, err)
	}
	ps, err := cs.ListPrompts(t.Context(), nil)
	if err != nil || len(ps.Prompts) != 1 {
		t.Fatalf("prompts: %v %v", ps, err)
	}
	gp, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: ps.Prompts[0].Name, Arguments: map[string]string{"a": "x"}})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if !whole && (len(gp.Messages) != 1 || gp.Messages[0] == nil) {
		t.Errorf("get: messages %v, want the one that is not null", gp.Messages)
	}
	rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: rs.Resources[0].URI})
	if !whole && (err != nil || len(rr.Contents) != 1 || rr.Contents[0] == nil) {
		t.Errorf("read: %v %v", rr, err)
	}
	// The gateway still serves: a second listing is answered.
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Errorf("tools after: %v", err)
	}
}

// askUpstream is a hostile MCP upstream over Streamable HTTP whose tool
// "ask" asks the calling client, on the call's stream, each of asks (a
// method and its raw params) at once, then answers the call once every
// one was answered (posted back), with how many were errors.
type askUpstream struct {
	asks     [][2]string
	answered atomic.Int32
	errs     atomic.Int32
	all      chan struct{}
	once     sync.Once
}

func (f *askUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Error  json.RawMessage `json:"error"`
	}
	json.Unmarshal(b, &m)
	answer := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
	}
	switch m.Method {
	case "initialize":
		answer(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"ask","version":"1"}}`)
	case "tools/list":
		answer(`{"tools":[{"name":"ask","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`)
	case "tools/call":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i, a := range f.asks {
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"q%d\",\"method\":%q,\"params\":%s}\n\n", i, a[0], a[1])
		}
		w.(http.Flusher).Flush()
		select {
		case <-f.all:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"%d answered, %d errors\"}]}}\n\n", m.ID, f.answered.Load(), f.errs.Load())
	case "":
		if len(m.Error) > 0 && string(m.Error) != "null" {
			f.errs.Add(1)
		}
		if int(f.answered.Add(1)) == len(f.asks) {
			f.once.Do(func() { close(f.all) })
		}
		w.WriteHeader(http.StatusAccepted)
	default: // notifications
		w.WriteHeader(http.StatusAccepted)
	}
}

// TestAttack25HostileAskedRequests: an upstream's sampling and elicitation
// requests with nulls where MCP has objects (the params, the messages, a
// message's content, the model preferences and hints, the requested form
// and its fields) and requests reach does not relay are each answered, a
// result or an error, and the call ends; the gateway goes on serving.
func TestAttack25HostileAskedRequests(t *testing.T) {
	f := &askUpstream{all: make(chan struct{}), asks: [][2]string{
		{"sampling/createMessage", `null`},
		{"sampling/createMessage", `{"maxTokens":5,"messages":null}`},
		{"sampling/createMessage", `{"maxTokens":5,"messages":[null]}`},
		{"sampling/createMessage", `{"maxTokens":5,"messages":[{"role":"user","content":null}]}`},
		{"sampling/createMessage", `{"maxTokens":5,"messages":[{"role":"user","content":{"type":"text","text":"a"}}],"modelPreferences":{"hints":null}}`},
		{"sampling/createMessage", `{"maxTokens":5,"messages":[{"role":"user","content":{"type":"text","text":"a"}}],"modelPreferences":{"hints":[null,{"name":null}]}}`},
		{"sampling/createMessage", `{"maxTokens":5,"messages":[{"role":"user","content":[null]}]}`},
		{"elicitation/create", `null`},
		{"elicitation/create", `{"message":"x","requestedSchema":null}`},
		{"elicitation/create", `{"message":"x","requestedSchema":{"type":"object","properties":null}}`},
		{"elicitation/create", `{"message":"x","requestedSchema":{"type":"object","properties":{"a":null}}}`},
		{"elicitation/create", `{"message":null,"mode":null}`},
		{"roots/list", `null`},
		{"no/such", `{}`},
	}}
	up := httptest.NewServer(f)
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: f\n    url: "+up.URL+"\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	res, text := callText(t, cs, "f__ask", map[string]any{}, nil)
	if want := fmt.Sprintf("%d answered", len(f.asks)); res.IsError || !strings.HasPrefix(text, want) {
		t.Fatalf("f__ask = %v %q, want %s", res.IsError, text, want)
	}
	if want := "5 errors"; !strings.HasSuffix(text, want) { // a null message, content null or [null], and the two methods not relayed
		t.Errorf("f__ask = %q, want %s", text, want)
	}
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Errorf("tools after: %v", err)
	}
}
