package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// orderUpstream keeps one order's address: get_order reads it,
// set_address writes it.
type orderUpstream struct {
	mu      sync.Mutex
	address string
	ran     []string
}

func newOrderShop(t *testing.T) (*shop, *orderUpstream) {
	t.Helper()
	u := &orderUpstream{address: "Main St"}
	s := mcp.NewServer(&mcp.Implementation{Name: "orders", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "get_order", Description: "Read order id.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			ID string `json:"id"`
		}) (*mcp.CallToolResult, any, error) {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.ran = append(u.ran, "get "+in.ID)
			return shopText("order " + in.ID + " ships to " + u.address), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "set_address", Description: "Set the address order id ships to."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			ID      string `json:"id"`
			Address string `json:"address"`
		}) (*mcp.CallToolResult, any, error) {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.ran = append(u.ran, "set "+in.ID+" "+in.Address)
			u.address = in.Address
			return shopText("order " + in.ID + " now ships to " + in.Address), nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	m := &shopModel{}
	ms := httptest.NewServer(m)
	t.Cleanup(ms.Close)
	cfg, err := config.Parse([]byte(fmt.Sprintf(`upstreams:
  - name: up
    url: %s
model: {base_url: '%s/v1', name: scripted}
tools:
  up__get_order: {reads: ["order:{id}"]}
  up__set_address: {access: write, writes: ["order:{id}"]}
`, up.URL, ms.URL)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	w := &wire{protocols: map[string]int{}, models: map[string]int{}}
	srv := httptest.NewServer(w.wrap(g.Handler()))
	t.Cleanup(srv.Close)
	return &shop{g: g, url: srv.URL, model: m, modelURL: ms.URL, wire: w}, u
}

// TestFrameworksStaleRead: OpenAI Agents, the AI SDK and LangGraph on
// their defaults read an order and then set its address; between the two,
// another client (a call of its own request, through the HTTP API) sets
// that order's address. Reach refuses the run's write, which was based on
// a read of the order that is now stale, as the tool's result (MCP
// isError), saying what changed and to read it again; the model reads it
// again and writes, which runs. The other client's address is never
// overwritten unseen: the upstream ran the other write, then the run's
// read, then the run's write, and the audit log holds the refusal with
// its code.
func TestFrameworksStaleRead(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "openai", "ai", "@ai-sdk/mcp", "@ai-sdk/openai",
		"@langchain/langgraph", "@langchain/mcp-adapters", "@langchain/openai")
	for _, fw := range []string{"openai-agents", "ai-sdk", "langgraph"} {
		t.Run(fw, func(t *testing.T) {
			s, up := newOrderShop(t)
			gate := &turnGate{held: make(chan struct{}, 1), hold: make(chan struct{})}
			s.model.gate.Store(gate)
			var once sync.Once
			release := func() { once.Do(func() { close(gate.hold) }) }
			t.Cleanup(release)
			done := make(chan agentRun, 1)
			go func() { done <- runAgent(t, dir, node, fw, "", "", s.url+"/mcp", s.url+"/v1", "stale", nil) }()
			select {
			case <-gate.held: // the run has read the order
			case r := <-done:
				t.Fatalf("the run ended before it read the order: %+v", r)
			case <-time.After(90 * time.Second):
				t.Fatal("the run never read the order")
			}
			code, b := do(t, "POST", s.url+"/v1/calls", `{"request_id":"other","tool_calls":[{"call_id":"c1","tool":"up__set_address","arguments":{"id":"7","address":"Oak St"}}]}`, nil)
			if st, _ := path(b, "results", 0, "status").(string); code != 200 || st != "success" {
				t.Fatalf("the other client's write: %d %v", code, b)
			}
			release()
			r := <-done
			if !r.OK {
				t.Fatalf("the run: %+v", r)
			}
			t.Logf("the model read: %s", clip(r.Text, 800))
			parts := strings.Split(strings.TrimPrefix(r.Text, "stale: "), " | ")
			if len(parts) != 4 || !strings.Contains(parts[1], "changed since you read it") || !strings.Contains(parts[1], "Read it again") ||
				!strings.Contains(parts[2], "Oak St") || !strings.Contains(parts[3], "now ships to Elm St") {
				t.Fatalf("the model read %q; want the write refused as stale, the order read again (Oak St), the write run", parts)
			}
			up.mu.Lock()
			got := strings.Join(up.ran, ", ")
			up.mu.Unlock()
			if want := "get 7, set 7 Oak St, get 7, set 7 Elm St"; got != want {
				t.Errorf("the upstream ran %s; want %s", got, want)
			}
			var root string
			for _, q := range s.g.rt.Requests() {
				if q.ID() != "other" {
					if root != "" && root != q.Root().ID() {
						t.Errorf("the run is in requests %s and %s, want one", root, q.Root().ID())
					}
					root = q.Root().ID()
				}
			}
			s.g.audit.Flush(t.Context())
			_, out := do(t, "GET", s.url+"/v1/audit?request="+root, "", nil)
			events, _ := out["events"].([]any)
			var writes []string
			for _, e := range events {
				if path(e, "event", "name") == "up__set_address" {
					writes = append(writes, fmt.Sprint(path(e, "event", "decision"), "/", path(e, "event", "code")))
				}
			}
			if got := strings.Join(writes, ", "); got != "refused/stale_read, completed/<nil>" {
				t.Errorf("the audit of the run's request %s: its writes %s; want refused/stale_read, completed/<nil>", root, got)
			}
		})
	}
}
