package front

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstreamBench is a read's whole path as reach serve takes it, in
// process: a POST's body given to AnswerPost (as the fasthttp lane gives
// it), the runtime, the wire client's exchange with a go-sdk upstream over
// loopback (its answer one SSE event), and the MCP answer written. The
// runtime and the pool mask with a redactor that knows a secret, as the
// gateway's always does.
type upstreamBench struct {
	s    *Server
	life context.Context
	h    http.Header
	n    int
}

// benchSecret is a secret the bench's redactor knows.
const benchSecret = "sk-bench-5f3a9c1e7d2b4a6f8e0c"

// benchUpstreamServer is a go-sdk MCP server with two read tools: echo
// answers its text as a text block; record answers an object as
// structured content (and its JSON as text, as the SDK writes it).
func benchUpstreamServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-upstream", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	type out struct {
		Text  string `json:"text"`
		Count int    `json:"count"`
	}
	read := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo.", Annotations: read},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "record", Description: "A record.", Annotations: read},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
			return nil, out{Text: a.Text, Count: len(a.Text)}, nil
		})
	return s
}

// poolHost is the upstream pool's host in the bench: a goroutine group, a
// catalog that drops what it is told, no logging levels.
type poolHost struct{ wg sync.WaitGroup }

func (h *poolHost) Go(f func()) bool                                { h.wg.Go(f); return true }
func (*poolHost) Relisted(string, []reach.Tool, []string)           {}
func (*poolHost) Level(*mcp.ServerSession) (mcp.LoggingLevel, bool) { return "", false }
func (*poolHost) SharedLevel() mcp.LoggingLevel                     { return "" }

func newUpstreamBench(tb testing.TB) *upstreamBench {
	tb.Helper()
	us := benchUpstreamServer()
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return us }, nil))
	tb.Cleanup(up.Close)
	red, err := redact.New(nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := red.Add(benchSecret); err != nil {
		tb.Fatal(err)
	}
	rt := reach.New(&reach.Options{DefaultBudget: &reach.Budget{}, Redactor: red})
	life, cancel := context.WithCancel(context.Background())
	h := &poolHost{}
	cfg := &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: up.URL}}}
	pool, err := upstream.Connect(context.Background(), life, &upstream.Options{Config: cfg, Runner: h, Catalog: h, Levels: h, Models: rt, Redactor: red})
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	rt.MustRegister(pool.Tools()...)
	owned := link.NewOwned(life, rt, time.Minute, link.Budgets{Default: &reach.Budget{}}) // unlimited, as served
	s := New(&Options{Runtime: rt, Owned: owned, Choices: &link.ModelChoices{}, Tools: allTools{rt}, Levels: &Levels{}, Upstreams: pool})
	pool.Serve(life, s.MCP())
	s.SyncTools()
	front := httptest.NewServer(s.Handler())
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: front.URL, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cs.Close()
		front.Close()
		s.Close()
		owned.EndAll()
		cancel()
		pool.Close()
		h.wg.Wait()
	})
	b := &upstreamBench{s: s, life: life, h: http.Header{}}
	b.h.Set(mcpwire.HeaderSession, cs.ID())
	b.h.Set(mcpwire.HeaderProtocol, mcpwire.SessionProtocol)
	b.h.Set("Content-Type", "application/json")
	b.h.Set("Accept", "application/json, text/event-stream")
	return b
}

// call calls tool with new arguments (text, numbered) through AnswerPost
// and returns the answer.
func (b *upstreamBench) call(tb testing.TB, tool, text string, out *bytes.Buffer) []byte {
	b.n++
	out.Reset()
	body := []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(b.n) + `,"method":"tools/call","params":{"name":"up__` + tool +
		`","arguments":{"text":"` + text + ` ` + strconv.Itoa(b.n) + `"}}}`)
	if _, ok := b.s.AnswerPost(b.life, b.h, body, out); !ok || !bytes.Contains(out.Bytes(), []byte(`"result"`)) ||
		bytes.Contains(out.Bytes(), []byte(`"isError":true`)) {
		tb.Fatalf("the fast lane did not answer the call: %v %s", ok, out.Bytes())
	}
	return out.Bytes()
}

// BenchmarkFastCallUpstream: a read's whole path in process (upstreamBench),
// the upstream's work included: echo (a text block) and record (structured
// content). Against main's test binary, interleaved:
//
//	go test -c -o front.test ./internal/front
//	for i in 1 2 3 4 5 6 7 8; do ./main.test -test.run '^$' -test.bench FastCallUpstream -test.benchmem -test.benchtime 5000x | sed 's/^Bench/main-Bench/'
//		./front.test -test.run '^$' -test.bench FastCallUpstream -test.benchmem -test.benchtime 5000x; done > out.txt
func BenchmarkFastCallUpstream(b *testing.B) {
	// lines: a text of a few lines with quotes, as JSON in the arguments
	// (escaped), which the upstream answers with escapes.
	lines := `line one\n\"quoted\" line two\n\tand a tab, <b> & more: ` + strings.Repeat(`word `, 20)
	for _, tc := range []struct{ name, tool, text string }{{"echo", "echo", "call"}, {"lines", "echo", lines}, {"record", "record", "call"}} {
		b.Run("tool="+tc.name, func(b *testing.B) {
			ub := newUpstreamBench(b)
			var out bytes.Buffer
			for range 50 {
				ub.call(b, tc.tool, tc.text, &out)
			}
			b.ReportAllocs()
			for b.Loop() {
				ub.call(b, tc.tool, tc.text, &out)
			}
		})
	}
}

// TestUpstreamReadAnswer: what a go-sdk upstream answers reaches the
// client through the fast lane as it was sent, escapes and all (a text
// with line breaks, quotes and non-ASCII, read and written without
// encoding/json), and a secret the gateway knows is masked wherever the
// upstream put it: in a text block, split across the text's escapes'
// neighbours, and in structured content.
func TestUpstreamReadAnswer(t *testing.T) {
	ub := newUpstreamBench(t)
	var out bytes.Buffer
	answer := func(tool, text string) (string, *mcp.CallToolResult) {
		t.Helper()
		b := ub.call(t, tool, text, &out)
		var msg struct {
			Result *mcp.CallToolResult `json:"result"`
		}
		if err := json.Unmarshal(b, &msg); err != nil || msg.Result == nil || len(msg.Result.Content) != 1 {
			t.Fatalf("%s: the answer is no tool result: %v %s", tool, err, b)
		}
		tc, ok := msg.Result.Content[0].(*mcp.TextContent)
		if !ok {
			t.Fatalf("%s: the answer's content is no text: %s", tool, b)
		}
		return tc.Text, msg.Result
	}
	// The text is sent inside the JSON of the arguments: escaped there.
	esc := func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) }

	text := "line one\nline \"two\"\ttab <b> & ünï ✓"
	if got, _ := answer("echo", esc(text)); got != text+" "+strconv.Itoa(ub.n) {
		t.Errorf("echo of a text with escapes = %q, want %q", got, text+" "+strconv.Itoa(ub.n))
	}
	for _, text := range []string{"key " + benchSecret + " here", "key\n" + benchSecret + "\nhere", "\"" + benchSecret + "\""} {
		got, res := answer("echo", esc(text))
		if strings.Contains(got, benchSecret) || !strings.Contains(got, redact.Mask) {
			t.Errorf("echo of %q reached the client as %q: want the secret masked", text, got)
		}
		if b, _ := json.Marshal(res); bytes.Contains(b, []byte(benchSecret)) {
			t.Errorf("echo of %q: the secret is in the answer %s", text, b)
		}
	}
	got, res := answer("record", esc("a "+benchSecret))
	b, _ := json.Marshal(res)
	if strings.Contains(got, benchSecret) || bytes.Contains(b, []byte(benchSecret)) || !bytes.Contains(b, []byte(redact.Mask)) {
		t.Errorf("record with a secret reached the client as %s: want the secret masked", b)
	}
	if sc, _ := json.Marshal(res.StructuredContent); !bytes.Contains(sc, []byte(redact.Mask)) {
		t.Errorf("record's structured content %s: want the secret masked there", sc)
	}
}
