package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPOverHTTP drives reach's /mcp over Streamable HTTP with the go-sdk
// client: with a session, plain calls are answered by the lean path, calls
// with a progress token and everything else by the SDK; on the sessionless
// protocol by the SDK's stateless handler; all must behave the same.
func TestMCPOverHTTP(t *testing.T) {
	for _, protocol := range []string{statelessProtocol, leanProtocol} {
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
			if got := cs.InitializeResult().ProtocolVersion; got != protocol {
				t.Fatalf("negotiated protocol %s, want %s", got, protocol)
			}
			if (cs.ID() == "") != (protocol == statelessProtocol) {
				t.Fatalf("session id %q on protocol %s", cs.ID(), protocol)
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

// TestAppendToolResult: the hand-written tool result is the JSON
// encoding/json writes, byte for byte in its strings and equal as a value.
func TestAppendToolResult(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " back \ slash`, "ctl \x00\x01\x1f\n\r\t\b\f", "<a href=x>&amp;</a>",
		"ünïcødé ✓ 😀", "bad \xff\xfe utf8", "line\u2028para\u2029end"} {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
	for _, res := range []*mcp.CallToolResult{
		{Content: []mcp.Content{&mcp.TextContent{Text: "echo: <one>"}}, Meta: mcp.Meta{MetaRequest: "req_1", MetaFrame: "00000000000000ab", MetaStatus: "success"}},
		{Content: []mcp.Content{&mcp.TextContent{Text: `{"sum": 3}`}}, StructuredContent: json.RawMessage(`{"sum": 3}`), Meta: mcp.Meta{MetaStatus: "success"}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "refused"}}, IsError: true,
			Meta: mcp.Meta{MetaStatus: "refused", MetaError: map[string]any{"type": "loop", "message": "a & b"}}},
		{Content: []mcp.Content{&mcp.TextContent{Text: ""}}},
	} {
		var buf bytes.Buffer
		if !appendToolResult(&buf, res) {
			t.Fatalf("appendToolResult(%+v) = false", res)
		}
		want, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(buf.Bytes(), &g); err != nil {
			t.Fatalf("invalid JSON %s: %v", buf.Bytes(), err)
		}
		json.Unmarshal(want, &w)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("appendToolResult mismatch (-want +got):\n%s", diff)
		}
	}
	var buf bytes.Buffer
	if appendToolResult(&buf, &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}}}}) || buf.Len() != 0 {
		t.Errorf("appendToolResult took an image content")
	}
}

// TestLeanHTTP reads answers the way the lean client does: chunked SSE
// with the last chunk late or already here, a length, the close.
func TestLeanHTTP(t *testing.T) {
	const event = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"reach-1\",\"result\":{}}\n\n"
	chunk := func(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }
	for _, tc := range []struct {
		name, answer string
		status       int
		drain        int
		body         string
	}{
		{"chunked, last chunk here", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(event) + "0\r\n\r\n", 200, drainDone, event},
		{"chunked, two chunks", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(event[:10]) + chunk(event[10:]) + "0\r\n\r\n", 200, drainDone, event},
		{"chunked, last chunk late", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(event), 200, drainMore, event},
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, drainDone, "hello"},
		{"interim answer", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 404, drainDone, ""},
		{"to the close", "HTTP/1.0 200 OK\r\n\r\nrest", 200, drainNo, "rest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tc.answer), 4096)
			resp, err := readLeanHead(br)
			if err != nil {
				t.Fatal(err)
			}
			if resp.status != tc.status {
				t.Errorf("status = %d, want %d", resp.status, tc.status)
			}
			if tc.drain != drainDone {
				// read the event only; what is left decides the drain
				buf := make([]byte, len(tc.body))
				if _, err := io.ReadFull(&resp.body, buf); err != nil || string(buf) != tc.body {
					t.Fatalf("body = %q, %v", buf, err)
				}
				if got := resp.body.drainBuffered(); got != tc.drain {
					t.Errorf("drainBuffered = %d, want %d", got, tc.drain)
				}
				return
			}
			b, err := io.ReadAll(&resp.body)
			if err != nil || string(b) != tc.body {
				t.Errorf("body = %q, %v; want %q", b, err, tc.body)
			}
			if got := resp.body.drainBuffered(); got != drainDone {
				t.Errorf("drainBuffered after the end = %d", got)
			}
		})
	}
	// Reading only the event leaves the last chunk, which drains without blocking.
	br := bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(event) + "0\r\n\r\n"))
	resp, _ := readLeanHead(br)
	buf := make([]byte, len(event))
	io.ReadFull(&resp.body, buf)
	if got := resp.body.drainBuffered(); got != drainDone || br.Buffered() != 0 {
		t.Errorf("drainBuffered = %d with %d bytes left", got, br.Buffered())
	}
}

// TestParseEnvelope: the lean scanner reads what encoding/json reads from
// messages whose keys are spelled exactly.
func TestParseEnvelope(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"a, b: {c}"}}}`,
		` { "jsonrpc" : "2.0" , "id" : "x\"y" , "method" : "tools/call" , "params" : { "arguments" : [1, {"a": "}"}] , "name" : "t\u00e9" , "_meta" : {"reach/why": "w", "n": 1} } } `,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"r"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":3}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","_meta":[1]}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":[1],"name":"a"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","arguments":null,"_meta":{}}}`,
		`{}`,
	} {
		var want rpcMessage
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		var got rpcMessage
		if !parseEnvelope([]byte(body), &got) {
			t.Errorf("parseEnvelope(%s) = false", body)
			continue
		}
		if got.JSONRPC != want.JSONRPC || got.Method != want.Method || string(got.ID) != string(want.ID) || string(got.Params) != string(want.Params) {
			t.Errorf("parseEnvelope(%s) = %+v, want %+v", body, got, want)
		}
		if len(want.Params) == 0 {
			continue
		}
		var wp, gp callParams
		werr := json.Unmarshal(want.Params, &wp)
		gerr := parseCallParams(got.Params, &gp)
		if (werr != nil || wp.Name == "") != (gerr != nil || gp.Name == "") {
			t.Errorf("params %s: refused %v, want %v", got.Params, gerr != nil || gp.Name == "", werr != nil || wp.Name == "")
			continue
		}
		if werr == nil && wp.Name != "" {
			if diff := cmp.Diff(wp, gp, cmpopts.EquateEmpty()); diff != "" { // an empty _meta is no _meta
				t.Errorf("params %s (-want +got):\n%s", got.Params, diff)
			}
		}
	}
	for _, body := range []string{`[]`, `"s"`, `1`} {
		var got rpcMessage
		if parseEnvelope([]byte(body), &got) {
			t.Errorf("parseEnvelope(%s) = true", body)
		}
	}
}

// TestParseAnswer: the lean reading of an upstream's answer matches
// encoding/json's, down to the call's data.
func TestParseAnswer(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":"reach-1","result":{"content":[{"type":"text","text":"a \"b\""}]}}`,
		`{"jsonrpc":"2.0","id":"reach-2","result":{"content":[{"type":"text","text":"{\"x\": 1}"},{"type":"text","text":"y"}],"isError":true}}`,
		`{"jsonrpc":"2.0","id":"reach-3","result":{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}],"structuredContent":{"k":[1,2]}}}`,
		`{"jsonrpc":"2.0","id":"reach-4","result":{"content":[],"structuredContent":null,"isError":false}}`,
		`{"jsonrpc":"2.0","id":"reach-5","error":{"code":-32602,"message":"bad","data":{"a":1}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
		`{"jsonrpc":"2.0","id":"reach-6","result":null}`,
	} {
		var want, got rpcMessage
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		if !parseAnswer([]byte(body), &got) {
			t.Errorf("parseAnswer(%s) = false", body)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("parseAnswer(%s) (-want +got):\n%s", body, diff)
		}
		if len(want.Result) == 0 {
			continue
		}
		var wr, gr leanResult
		if err := json.Unmarshal(want.Result, &wr); err != nil {
			t.Fatal(err)
		}
		if err := gr.parse(got.Result); err != nil {
			t.Errorf("parse(%s): %v", got.Result, err)
			continue
		}
		if string(wr.data(nil)) != string(gr.data(nil)) || wr.IsError != gr.IsError {
			t.Errorf("result %s: data %s isError %v, want %s %v", got.Result, gr.data(nil), gr.IsError, wr.data(nil), wr.IsError)
		}
	}
	for _, body := range []string{`{"jsonrpc":"2.0","id":1,"error":"x"}`, `{"jsonrpc":"2.0",`, `[1]`, `{"method":1}`} {
		var got rpcMessage
		if parseAnswer([]byte(body), &got) {
			t.Errorf("parseAnswer(%s) = true", body)
		}
	}
	for _, r := range []string{`{"content":{}}`, `{"isError":"yes"}`, `[]`} {
		var lr leanResult
		if lr.parse([]byte(r)) == nil {
			t.Errorf("parse(%s) = nil", r)
		}
	}
}

// TestLeanConnections: lean calls to an HTTP upstream reuse their
// connections, and a connection the upstream closed while idle is not
// used again: the next call dials and succeeds at its first attempt (the
// tool has no retries, so a call on the closed connection would fail).
func TestLeanConnections(t *testing.T) {
	p := newUpstreamProbe()
	up := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, nil))
	var conns atomic.Int32
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	g := newTestGateway(t, &Config{Upstreams: []Upstream{{Name: "up", URL: up.URL}},
		Tools: map[string]ToolOverride{"up__echo": {Retry: &RetryConfig{Attempts: 1}}}})
	cs := connectMCP(t, g, nil)
	callText(t, cs, "up__echo", map[string]any{"text": "warm"}, nil)
	before := conns.Load()
	for i := range 50 {
		if _, text := callText(t, cs, "up__echo", map[string]any{"text": strconv.Itoa(i)}, nil); text != "echo: "+strconv.Itoa(i) {
			t.Fatalf("call %d: %q", i, text)
		}
	}
	if n := conns.Load() - before; n > 2 {
		t.Errorf("50 sequential calls opened %d connections to the upstream", n)
	}
	up.CloseClientConnections()
	time.Sleep(50 * time.Millisecond) // the close reaches the idle connections
	for i := range 3 {
		if _, text := callText(t, cs, "up__echo", map[string]any{"text": "after " + strconv.Itoa(i)}, nil); text != "echo: after "+strconv.Itoa(i) {
			t.Errorf("call %d after the upstream closed its connections: %q", i, text)
		}
	}
}

// TestLeanConnAlive: the liveness probe of an idle connection tells an
// open one from one the server closed or wrote to unasked, without
// blocking.
func TestLeanConnAlive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	p := &leanConns{addr: ln.Addr().String()}
	dial := func() (*leanConn, net.Conn) {
		c, err := p.get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.nc.Close() })
		return c, <-accepted
	}
	waitFor := func(c *leanConn, want bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); c.alive() != want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("alive() stayed %v", !want)
			}
		}
	}
	open, _ := dial()
	if !open.alive() {
		t.Error("an open idle connection counts as closed")
	}
	closed, sc := dial()
	sc.Close()
	waitFor(closed, false)
	chatty, sc := dial()
	defer sc.Close()
	sc.Write([]byte("HTTP/1.1 408 Request Timeout\r\n\r\n"))
	waitFor(chatty, false)
	if !open.alive() {
		t.Error("an open idle connection counts as closed after the others")
	}
}

// TestLeanResumesClosedStream: an upstream that closes a call's SSE stream
// before it answers (SEP-1699 polling) is asked again with the
// Last-Event-ID, and the call gets its result; the tool, a write without
// retries, ran once per call.
func TestLeanResumesClosedStream(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "polling", Version: "1"}, nil)
	var runs atomic.Int32
	no := false
	type in struct {
		Closes int `json:"closes"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "poll", Description: "Close the stream, then answer.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &no}},
		func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			n := runs.Add(1)
			for range a.Closes {
				req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
				time.Sleep(150 * time.Millisecond)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done " + strconv.Itoa(int(n))}}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}))
	t.Cleanup(up.Close)
	g := newTestGateway(t, &Config{Upstreams: []Upstream{{Name: "up", URL: up.URL}}})
	cs := connectMCP(t, g, nil)
	calls := []struct {
		closes int
		meta   mcp.Meta
	}{{1, nil}, {2, nil}, {0, nil}, {1, mcp.Meta{"progressToken": "p"}}} // the last with progress
	for i, c := range calls {
		res, text := callText(t, cs, "up__poll", map[string]any{"closes": c.closes}, c.meta)
		if want := "done " + strconv.Itoa(i+1); res.IsError || text != want {
			t.Errorf("call %d (stream closed %d times): %q, want %q", i+1, c.closes, text, want)
		}
	}
	if n := runs.Load(); n != int32(len(calls)) {
		t.Errorf("the tool ran %d times for %d calls", n, len(calls))
	}
}

// TestSSECursor: the lean client resumes an SSE answer from the id of its
// last complete event (an event cut off by the stream's end does not
// count, as in a browser), takes any all-digit retry (capped), and treats
// reaching its size limit as an error, not as the upstream closing.
func TestSSECursor(t *testing.T) {
	g := newTestGateway(t, &Config{Upstreams: []Upstream{{Name: "up", URL: serveUpstream(t, newUpstreamProbe()).URL}}})
	u := g.upstreams[0]
	ls := &leanSession{id: "s", protocol: leanProtocol}
	for _, tc := range []struct {
		name, stream string
		lastID       string
		retry        time.Duration
		closed       bool // errStreamClosed: resumable
	}{
		{"cut after the id of the response", "id: s_1\ndata:\n\nid: s_2\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"reach-1\",\"result\":{}}\n", "s_1", 0, true},
		{"cut inside a line", "id: s_1\ndata:\n\nid: s_2\ndata: {\"jsonrpc\"", "s_1", 0, true},
		{"priming event only", "id: s_0\nretry: 500\ndata:\n\n", "s_0", 500 * time.Millisecond, true},
		{"huge retry", "id: s_0\nretry: 99999999999999999999\n\n", "s_0", maxResumeDelay, true},
		{"retry not digits", "id: s_0\nretry: -5\nretry: 1e3\n\n", "s_0", 0, true},
		{"id reset by a bare id field", "id: s_0\n\nid\n\n", "", 0, false},
		{"no id", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n", "", 0, false},
	} {
		var cur sseCursor
		_, err := u.readSSE(context.Background(), ls, strings.NewReader(tc.stream), `"reach-1"`, "", nil, &cur)
		if cur.lastID != tc.lastID || cur.retry != tc.retry || errors.Is(err, errStreamClosed) != tc.closed {
			t.Errorf("%s: lastID %q retry %v err %v; want %q, %v, resumable %v", tc.name, cur.lastID, cur.retry, err, tc.lastID, tc.retry, tc.closed)
		}
	}
	defer func(n int64) { maxUpstreamResult = n }(maxUpstreamResult)
	maxUpstreamResult = 40
	var cur sseCursor
	_, err := u.readSSE(context.Background(), ls, strings.NewReader("id: s_1\ndata:\n\n"+strings.Repeat(": padding\n", 10)), `"reach-1"`, "", nil, &cur)
	if err == nil || errors.Is(err, errStreamClosed) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("an answer over the limit: %v, want an error saying it is too large", err)
	}
}

// TestLeanFollowsRedirect: an upstream whose endpoint redirects (…/mcp to
// …/mcp/, as some servers do) is called through the redirect; nothing runs
// twice.
func TestLeanFollowsRedirect(t *testing.T) {
	p := newUpstreamProbe()
	var echoes atomic.Int32
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp/", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/mcp/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"name":"echo"`)) {
			echoes.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sdk.ServeHTTP(w, r)
	})
	up := httptest.NewServer(mux)
	t.Cleanup(up.Close)
	g := newTestGateway(t, &Config{Upstreams: []Upstream{{Name: "up", URL: up.URL + "/mcp"}},
		Tools: map[string]ToolOverride{"up__echo": {Retry: &RetryConfig{Attempts: 1}}}})
	cs := connectMCP(t, g, nil)
	for i := range 3 {
		want := "echo: " + strconv.Itoa(i)
		if res, text := callText(t, cs, "up__echo", map[string]any{"text": strconv.Itoa(i)}, nil); res.IsError || text != want {
			t.Errorf("call %d through a redirecting endpoint: %q, want %q", i, text, want)
		}
	}
	if n := echoes.Load(); n != 3 {
		t.Errorf("the upstream ran echo %d times for 3 calls", n)
	}
}
