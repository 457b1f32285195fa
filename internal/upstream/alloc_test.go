package upstream

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cannedCalls serves the echo server over Streamable HTTP, but answers
// each tools/call itself (calls counts those linked to a frame), as an SSE stream holding the response (as the
// go-sdk's server does) with the text "echo: hi", from buffers it keeps:
// an upstream that allocates little of its own for a call, so that a
// count of the process's allocations is mostly the wire client's.
func cannedCalls(t *testing.T) (srv *httptest.Server, calls func() int) {
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer() }, nil)
	var mu sync.Mutex
	var body bytes.Buffer
	var out []byte
	n := 0
	sse := []string{"text/event-stream"}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			sdk.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		body.Reset()
		body.ReadFrom(r.Body)
		b := body.Bytes()
		i := bytes.Index(b, []byte(`"id":`))
		if !bytes.Contains(b, []byte(`"method":"tools/call"`)) || i < 0 || bytes.IndexByte(b[i:], ',') < 0 {
			r.Body = io.NopCloser(bytes.NewReader(bytes.Clone(b)))
			mu.Unlock()
			sdk.ServeHTTP(w, r)
			return
		}
		defer mu.Unlock()
		id := b[i+len(`"id":`) : i+bytes.IndexByte(b[i:], ',')]
		out = append(out[:0], "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"...)
		out = append(out, id...)
		out = append(out, `,"result":{"content":[{"type":"text","text":"echo: hi"}]}}`+"\n\n"...)
		w.Header()["Content-Type"] = sse
		w.Write(out)
		if bytes.Contains(b, []byte(`"traceparent":"00-`)) && bytes.Contains(b, []byte(`"reach/parent":"`)) {
			n++ // a call linked to its frame
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// TestWireCallAllocations: a call of an HTTP upstream's tool through its
// reach Func, on the wire client (a pooled connection, an SSE answer),
// allocates no more than when measured, the in-process upstream's own
// HTTP server included (net/http's request, its headers and its response):
// the call's state, the answer's message and its tool result are one
// allocation, and the message holds its id and result in one copy of its
// event's data; the call's traceparent and parent frame are written into
// its _meta, not made a string first; its text, printable ASCII without
// an escape, is read as a view of the answer and its data is its JSON
// token there, not a copy (33 with the data a copy of the text; 34 with
// the text a copy of its own first; 35 with the traceparent a string; 39 with the three
// apart, a copy of the id and another of the result, and the target
// errors.As was given for a held-back call made on every call).
// The call's text reaches the caller as the upstream sent it, and every
// call reaches the upstream, linked to its frame.
func TestWireCallAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	srv, served := cannedCalls(t)
	p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL}}})
	var fn func(context.Context, []byte) ([]byte, error)
	for _, rt := range p.Tools() {
		if rt.Name == "up__echo" {
			fn = func(ctx context.Context, args []byte) ([]byte, error) { return rt.Func(ctx, args) }
		}
	}
	if fn == nil {
		t.Fatal("no tool up__echo")
	}
	args := []byte(`{"text":"hi"}`)
	ctx := reach.WithParent(context.Background(), someFrame(t)) // linked to a frame, as served
	calls := 0
	call := func() {
		data, err := fn(ctx, args)
		if err != nil || string(data) != `"echo: hi"` {
			t.Fatalf("the call answered %s, %v; want the upstream's text", data, err)
		}
		calls++
	}
	for range 20 {
		call()
	}
	n := testing.AllocsPerRun(200, call)
	t.Logf("a wire call allocates %v times", n)
	if n > 32 {
		t.Errorf("a wire call allocates %v times, want at most 32", n)
	}
	if got := served(); got != calls {
		t.Errorf("the upstream was sent %d calls linked to their frame, of %d", got, calls)
	}
}
