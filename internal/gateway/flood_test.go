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
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// floodUpstream is a hostile MCP upstream over Streamable HTTP: its tool
// "flood" answers on an SSE stream that first asks the calling client for
// n elicitations at once, then answers the call once every one of them was
// answered (posted back). refused counts the answers that are errors.
type floodUpstream struct {
	n                 int
	answered, refused atomic.Int32
	all               chan struct{}
	once              sync.Once
	lastRefusal       atomic.Value // string
}

func (f *floodUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(b, &m)
	answer := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
	}
	switch m.Method {
	case "initialize":
		answer(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"flood","version":"1"}}`)
	case "tools/list":
		answer(`{"tools":[{"name":"flood","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`)
	case "tools/call":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i := range f.n {
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"e%d\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"confirm %d\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}}\n\n", i, i)
		}
		w.(http.Flusher).Flush()
		select {
		case <-f.all:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n", m.ID)
	case "":
		if m.Error != nil {
			f.refused.Add(1)
			f.lastRefusal.Store(m.Error.Message)
		}
		if int(f.answered.Add(1)) == f.n {
			f.once.Do(func() { close(f.all) })
		}
		w.WriteHeader(http.StatusAccepted)
	default: // notifications
		w.WriteHeader(http.StatusAccepted)
	}
}

// TestUpstreamRequestFloodBounded: an upstream that asks a tool call's
// client for many elicitations at once gets at most maxRelayed of them
// relayed at a time; the others are answered at once with an error that
// says why, instead of each holding a goroutine (and, answered, a
// connection to the upstream) for as long as the client takes.
func TestUpstreamRequestFloodBounded(t *testing.T) {
	const n = 200
	f := &floodUpstream{n: n, all: make(chan struct{})}
	up := httptest.NewServer(f)
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: f\n    url: "+up.URL+"\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	var open, most atomic.Int32
	release := make(chan struct{})
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			now := open.Add(1)
			defer open.Add(-1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.MCPServer().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := client.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "f__flood", Arguments: map[string]any{}})
		if err != nil {
			t.Errorf("f__flood: %v", err)
		}
		done <- res
	}()
	// Every elicitation is either at the client or answered.
	for int(open.Load()+f.answered.Load()) < n {
		select {
		case res := <-done:
			t.Fatalf("the call ended first: %+v", res)
		case <-time.After(5 * time.Millisecond):
		}
	}
	close(release)
	if res := <-done; res == nil || res.IsError {
		t.Fatalf("f__flood = %+v, want done", res)
	}
	if m := most.Load(); m > upstream.MaxAsked {
		t.Errorf("the client was asked %d elicitations at once, want at most %d", m, upstream.MaxAsked)
	}
	if r := f.refused.Load(); int(r) < n-upstream.MaxAsked {
		t.Errorf("%d of %d elicitations were refused, want at least %d", r, n, n-upstream.MaxAsked)
	}
	if s, _ := f.lastRefusal.Load().(string); !strings.Contains(s, "at once") {
		t.Errorf("the refusal says %q, want why", s)
	}
}
