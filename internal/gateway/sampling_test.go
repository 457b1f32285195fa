package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// samplingUpstream serves a Go MCP server whose tool "ask" asks the client
// for a completion (sampling/createMessage) and returns its text.
func samplingUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "sampler", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Ask the model.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Q string `json:"q"`
		}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 50,
				Messages:         []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Q}}},
				ModelPreferences: &mcp.ModelPreferences{Hints: []*mcp.ModelHint{{Name: "client-model"}}}})
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "model said: " + res.Content.(*mcp.TextContent).Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// TestSamplingIsAModelFrameUnderTheCall: an upstream's sampling request
// during its tool call reaches the downstream client that made the call,
// as a model frame under the call (with the tokens the client reports), and
// the tool call the client makes while answering it, naming the frame in
// _meta, nests under the model frame.
func TestSamplingIsAModelFrameUnderTheCall(t *testing.T) {
	for _, front := range []string{"in-memory", "http"} {
		t.Run(front, func(t *testing.T) {
			up := samplingUpstream(t)
			cfg, err := config.Parse([]byte("examples: true\nupstreams:\n  - name: s\n    url: "+up.URL+"\n"), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			g := newTestGateway(t, cfg)
			var cs *mcp.ClientSession
			var sawParent string
			client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
				CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					sawParent, _ = req.Params.Meta[link.MetaParent].(string)
					// The model picks a tool: the agent runs it through reach, naming the model frame.
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_kb", Arguments: map[string]any{"query": "refund"},
						Meta: mcp.Meta{link.MetaParent: sawParent}})
					if err != nil || res.IsError {
						t.Errorf("nested search_kb: %v %v", err, res)
					}
					return &mcp.CreateMessageResult{Model: "client-model", Role: "assistant",
						Content: &mcp.TextContent{Text: "30 days"},
						Meta:    mcp.Meta{"usage": map[string]any{"input_tokens": 7, "output_tokens": 3}}}, nil
				},
			})
			var tr mcp.Transport
			if front == "http" {
				srv := serveTest(t, g)
				tr = &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}
			} else {
				ct, st := mcp.NewInMemoryTransports()
				ss, err := g.MCPServer().Connect(t.Context(), st, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ss.Close() })
				tr = ct
			}
			cs, err = client.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })

			res, text := callText(t, cs, "s__ask", map[string]any{"q": "how long do refunds take?"}, mcp.Meta{link.MetaRequest: "sampling"})
			if res.IsError || text != "model said: 30 days" {
				t.Fatalf("s__ask = %q (error %v)", text, res.IsError)
			}
			r, ok := g.rt.Lookup("sampling")
			if !ok {
				t.Fatal("request is not kept")
			}
			var ask, model, kb *reach.Frame
			for _, f := range r.Frames() {
				switch {
				case f.Name == "s__ask":
					ask = f
				case f.Kind == reach.ModelFrame:
					model = f
				case f.Name == "search_kb":
					kb = f
				}
			}
			if ask == nil || model == nil || kb == nil {
				t.Fatalf("frames: ask=%v model=%v search_kb=%v", ask, model, kb)
			}
			if model.Parent != ask || model.Name != "client-model" || model.State() != reach.Completed {
				t.Errorf("model frame: parent=%v name=%s state=%v, want under s__ask, client-model, completed", model.Parent, model.Name, model.State())
			}
			if model.Tokens() != 10 {
				t.Errorf("model tokens = %d, want 10 (from the result's usage)", model.Tokens())
			}
			if sawParent != model.ID.String() {
				t.Errorf("the client saw reach/parent %q, want the model frame %s", sawParent, model.ID)
			}
			if kb.Parent != model || kb.Depth != 2 {
				t.Errorf("search_kb parent=%v depth=%d, want the model frame, depth 2", kb.Parent, kb.Depth)
			}
			if got := r.Usage().Tokens; got < 10 {
				t.Errorf("request tokens = %d, want the sampling's 10 charged", got)
			}
			dot := renderDOT(t, g, "sampling")
			if !strings.Contains(dot, "client-model") {
				t.Errorf("graph lacks the model frame:\n%s", dot)
			}
		})
	}
}

// renderDOT returns the request's graph as DOT through the API handler.
func renderDOT(t *testing.T, g *Gateway, id string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "http://127.0.0.1/v1/requests/"+id+"/graph?format=dot", nil)
	req.RemoteAddr = "127.0.0.1:1234"
	g.Handler().ServeHTTP(rec, req)
	return rec.Body.String()
}

// TestSamplingGoesToTheCallingClient: two clients whose calls are in flight
// at once each answer the sampling request of their own call.
func TestSamplingGoesToTheCallingClient(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "sampler", Version: "1"}, nil)
	var arrived sync.WaitGroup
	arrived.Add(2)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			arrived.Done()
			arrived.Wait() // both calls are in flight
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "who are you?"}}}})
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: s\n    url: "+up.URL+"\n    prefix: ''\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	answers := make(chan string, 2)
	for _, who := range []string{"A", "B"} {
		c := mcp.NewClient(&mcp.Implementation{Name: "agent-" + who, Version: "1"}, &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: who}}, nil
			}})
		cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		go func() {
			_, text := callText(t, cs, "ask", map[string]any{}, nil)
			answers <- who + "=" + text
		}()
	}
	got := map[string]bool{}
	for range 2 {
		select {
		case a := <-answers:
			got[a] = true
		case <-time.After(10 * time.Second):
			t.Fatal("the calls did not complete")
		}
	}
	if !got["A=A"] || !got["B=B"] {
		t.Errorf("answers = %v, want each client to answer its own call's sampling", got)
	}
}
