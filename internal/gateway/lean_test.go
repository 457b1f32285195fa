package gateway

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPOverHTTP drives reach's /mcp over Streamable HTTP with the go-sdk
// client: plain calls are answered by the lean path, calls with a progress
// token and everything else by the SDK; both must behave the same.
func TestMCPOverHTTP(t *testing.T) {
	for _, protocol := range []string{"", leanProtocol} {
		t.Run("protocol="+protocol, func(t *testing.T) {
			g, p, srv := upstreamGateway(t, probeConfig)
			var progress atomic.Int32
			c := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
			})
			ctx := context.Background()
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if cs.ID() == "" {
				t.Fatalf("no session (protocol %s)", cs.InitializeResult().ProtocolVersion)
			}

			r1, text := callText(t, cs, "up__echo", map[string]any{"text": "one"}, nil)
			if r1.IsError || text != "echo: one" {
				t.Errorf("up__echo = %q", text)
			}
			r2, _ := callText(t, cs, "up__add", map[string]any{"a": 1, "b": 2}, nil)
			if sc, _ := r2.StructuredContent.(map[string]any); sc["sum"] != 3.0 {
				t.Errorf("up__add structured = %v", r2.StructuredContent)
			}
			if r1.Meta[MetaRequest] != r2.Meta[MetaRequest] {
				t.Errorf("one client's calls ran in requests %v and %v", r1.Meta[MetaRequest], r2.Meta[MetaRequest])
			}
			r3, text := callText(t, cs, "up__delete_all", map[string]any{}, nil)
			if !r3.IsError || !strings.Contains(text, "approval") {
				t.Errorf("up__delete_all = %q, want a refusal", text)
			}
			_, text = callText(t, cs, "nope", map[string]any{}, nil)
			if !strings.Contains(text, "There is no tool named") {
				t.Errorf("unknown tool = %q", text)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "x"},
				Meta: mcp.Meta{MetaParent: "bad"}}); err == nil || !strings.Contains(err.Error(), "frame id") {
				t.Errorf("malformed reach/parent: err = %v", err)
			}

			params := &mcp.CallToolParams{Name: "up__ticks", Arguments: map[string]any{"n": 3}}
			params.SetProgressToken("t1")
			if _, err := cs.CallTool(ctx, params); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for progress.Load() < 3 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if n := progress.Load(); n != 3 {
				t.Errorf("%d progress notifications, want 3", n)
			}

			cctx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() {
				cs.CallTool(cctx, &mcp.CallToolParams{Name: "up__slow", Arguments: map[string]any{"text": "s"}})
			})
			waitFor(t, p.started, "the slow call to start")
			cancel()
			waitFor(t, p.cancelled, "the upstream call to be cancelled")
			wg.Wait()

			// The session is still usable after a cancelled call.
			if _, text := callText(t, cs, "up__echo", map[string]any{"text": "after"}, nil); text != "echo: after" {
				t.Errorf("after cancel: %q", text)
			}
			if g.leanHits.Load() == 0 {
				t.Errorf("no call took the lean path")
			}
		})
	}
}

// TestLeanUpstreamReconnects: when the upstream forgets the session (a
// restart answers 404), the next call opens a new session and succeeds.
func TestLeanUpstreamReconnects(t *testing.T) {
	g, _, _ := upstreamGateway(t, probeConfig)
	cs := connectMCP(t, g, nil)
	if _, text := callText(t, cs, "up__echo", map[string]any{"text": "a"}, nil); text != "echo: a" {
		t.Fatalf("first call: %q", text)
	}
	u := g.upstreams[0]
	u.mu.Lock()
	old := u.cs
	u.mu.Unlock()
	// Simulate the upstream losing the session: end it on the upstream side
	// by deleting it the way a client would.
	old.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, text := callText(t, cs, "up__echo", map[string]any{"text": "b"}, nil)
		if text == "echo: b" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after the session ended: %q", text)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
