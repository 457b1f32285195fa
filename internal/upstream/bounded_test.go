package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/retry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// One answer of an upstream is read to mcpwire.MaxAnswer bytes, as JSON or
// as one SSE event: the SDK read a JSON answer whole, and its Streamable
// transport's events without bound (MaxEventSize 0), so one tools/list
// answer that never ended held 4.4 GB of reach serve within 20 s. Past the
// bound the listing fails and nothing of it is offered; the upstream stops
// being sent the answer's rest.
func TestUpstreamAnswerBounded(t *testing.T) {
	defer func(n int64) { mcpwire.MaxAnswer = n }(mcpwire.MaxAnswer)
	mcpwire.MaxAnswer = 1 << 20
	const sent = 8 << 20
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			var written atomic.Int64
			echo := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer() }, &mcp.StreamableHTTPOptions{Stateless: true})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				var msg struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				json.Unmarshal(body, &msg)
				if msg.Method != "tools/list" {
					r.Body = io.NopCloser(bytes.NewReader(body))
					echo.ServeHTTP(w, r)
					return
				}
				head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"big","inputSchema":{"type":"object"},"description":"`, msg.ID)
				tail := `"}]}}`
				if sse {
					w.Header().Set("Content-Type", "text/event-stream")
					head, tail = "event: message\ndata: "+head, tail+"\n\n"
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				io.WriteString(w, head)
				chunk := strings.Repeat("x", 64<<10)
				for n := 0; n < sent; n += len(chunk) {
					if _, err := io.WriteString(w, chunk); err != nil {
						return
					}
					written.Add(int64(len(chunk)))
				}
				io.WriteString(w, tail)
			}))
			t.Cleanup(srv.Close)
			p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL + "/mcp"}}})
			for _, rt := range p.Tools() {
				if rt.Name == "up__big" || rt.Name == "big" {
					t.Fatalf("a listing of %d bytes, the bound %d: its tool %s was offered", sent, mcpwire.MaxAnswer, rt.Name)
				}
			}
		})
	}
}

// A listing's pages together are bounded as one answer is: each tool is
// kept whole (its pin is of the whole definition), and pages of one large
// tool each, a next cursor on every one, were all kept until the
// listing's timeout (30 s: gigabytes from an upstream on a fast link).
func TestUpstreamListingBounded(t *testing.T) {
	defer func(n int64) { mcpwire.MaxAnswer = n }(mcpwire.MaxAnswer)
	mcpwire.MaxAnswer = 1 << 20
	desc := strings.Repeat("x", 256<<10) // a quarter of the bound a page
	var pages atomic.Int64
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "pages", Version: "1"}, &mcp.ServerOptions{PageSize: 1})
		for i := range 16 {
			s.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%02d", i), Description: desc, InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
		}
		pages.Add(1)
		return s
	}, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL + "/mcp"}}})
	if tools := p.Tools(); len(tools) != 0 {
		t.Fatalf("a listing of 16 tools of %d bytes each, the bound %d: %d tools offered; want none", len(desc), mcpwire.MaxAnswer, len(tools))
	}
}

// The resources, resource templates and prompts of one upstream's listing
// that reach mirrors are bounded as its tools are: a million tiny ones fit
// in one answer, and each was kept and listed to every client. Past the
// bound the mirror keeps what it had (here nothing); within it, all. Each
// upstream lists one kind past the bound and the other within it: the one
// within it shows that its mirror ran (both are put on the server at once).
func TestUpstreamMirrorBounded(t *testing.T) {
	defer func(n int) { maxMirrored = n }(maxMirrored)
	maxMirrored = 10
	serve := func(name string, resources, prompts int) string {
		s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
		for i := range resources {
			uri := fmt.Sprintf("file:///%s%02d", name, i)
			s.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{}, nil
			})
		}
		for i := range prompts {
			s.AddPrompt(&mcp.Prompt{Name: fmt.Sprintf("p%02d", i)}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{}, nil
			})
		}
		srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	p := newPool(t, &config.Config{Upstreams: []config.Upstream{
		{Name: "res", URL: serve("res", 11, 10)}, {Name: "pro", URL: serve("pro", 10, 11)}}})
	deadline := time.Now().Add(10 * time.Second)
	for (p.Owner(true, "res__p09") == "" || p.Owner(false, "file:///pro09") == "") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the mirrors run once the pool serves
	}
	if p.Owner(true, "res__p09") != "res" || p.Owner(false, "file:///pro09") != "pro" {
		t.Fatalf("within the bound: res__p09 from %q, file:///pro09 from %q; want res, pro",
			p.Owner(true, "res__p09"), p.Owner(false, "file:///pro09"))
	}
	for _, name := range []string{"file:///res00", "file:///res10"} {
		if got := p.Owner(false, name); got != "" {
			t.Errorf("a listing of 11 resources, the bound 10: %s mirrored from %q; want none", name, got)
		}
	}
	for _, name := range []string{"pro__p00", "pro__p10"} {
		if got := p.Owner(true, name); got != "" {
			t.Errorf("a listing of 11 prompts, the bound 10: %s mirrored from %q; want none", name, got)
		}
	}
}

// A tool's answer past mcpwire.MaxAnswer, as JSON or as SSE, fails as
// too_large, a permanent failure whose text says what to do: it was
// "unavailable", which is retried (the answer read again, as large) and
// counted against the upstream's breaker, and as JSON its text said the
// answer, cut at the bound, was "not a JSON-RPC message". An answer within
// the bound passes, and the upstream serves on.
func TestUpstreamAnswerTooLarge(t *testing.T) {
	defer func(n int64) { mcpwire.MaxAnswer = n }(mcpwire.MaxAnswer)
	mcpwire.MaxAnswer = 1 << 20
	for _, asJSON := range []bool{true, false} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
				s := echoServer()
				type in struct {
					Bytes int `json:"bytes"`
				}
				mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(_ context.Context, _ *mcp.CallToolRequest, i in) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", i.Bytes)}}}, nil, nil
				})
				return s
			}, &mcp.StreamableHTTPOptions{JSONResponse: asJSON}))
			t.Cleanup(srv.Close)
			p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL}}})
			var big func(context.Context, json.RawMessage) (json.RawMessage, error)
			for _, rt := range p.Tools() {
				if rt.Name == "up__big" {
					big = rt.Func
				}
			}
			if big == nil {
				t.Fatal("no tool up__big")
			}
			if _, err := big(t.Context(), json.RawMessage(`{"bytes":524288}`)); err != nil {
				t.Fatalf("an answer of half the bound: %v", err)
			}
			_, err := big(t.Context(), json.RawMessage(`{"bytes":2097152}`))
			te, transient := retry.Transient(err, false, true)
			if te == nil || transient || te.Type != "too_large" || !strings.Contains(te.Message, "ask the tool for less") {
				t.Fatalf("an answer of twice the bound: %v (transient %v); want a permanent too_large saying to ask for less", err, transient)
			}
			if got := echo(t, p, "up__echo", "hi"); got != "echo: hi" {
				t.Fatalf("after an answer past the bound, echo: %q", got)
			}
		})
	}
}
