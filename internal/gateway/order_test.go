package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawMCP is a bare Streamable HTTP client session: it shows the messages
// of an answer in the order they are on the wire, which an SDK client
// (queueing notifications for a handler) cannot.
type rawMCP struct {
	t   *testing.T
	url string
	sid string
}

func newRawMCP(t *testing.T, url, capabilities string) *rawMCP {
	t.Helper()
	c := &rawMCP{t: t, url: url}
	msgs, h := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + capabilities + `,"clientInfo":{"name":"raw","version":"1"}}}`)
	if len(msgs) != 1 || msgs[0]["result"] == nil {
		t.Fatalf("initialize answered %v", msgs)
	}
	c.sid = h.Get(mcpwire.HeaderSession)
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// post sends one message and returns the messages of the answer, in order.
func (c *rawMCP) post(body string) ([]map[string]any, http.Header) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set(mcpwire.HeaderSession, c.sid)
		req.Header.Set(mcpwire.HeaderProtocol, "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []map[string]any
	add := func(data string) {
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			c.t.Fatalf("not a JSON-RPC message: %q", data)
		}
		out = append(out, m)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok && strings.TrimSpace(d) != "" {
				add(strings.TrimSpace(d))
			}
		}
	} else if b, _ := io.ReadAll(resp.Body); len(strings.TrimSpace(string(b))) > 0 {
		add(string(b))
	}
	return out, resp.Header
}

// TestUpstreamNotificationsInOrder: the progress notifications and log
// messages an upstream sends during a call, the last ones right before its
// result, reach the client on the call's stream, all of them, in the order
// sent, before the result — over HTTP (the gateway's own session and a
// session of a client's own) and over stdio.
func TestUpstreamNotificationsInOrder(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, upstream, caps string }{
		{"http", "http", `{}`},
		{"http, a client that samples", "http", `{"sampling":{},"elicitation":{}}`},
		{"stdio", "stdio", `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g *Gateway
			if tc.upstream == "stdio" {
				g = newTestGateway(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", Command: []string{exe}, Env: map[string]config.Secret{"REACH_TEST_STDIO_UPSTREAM": "1"}}}})
			} else {
				g, _, _ = upstreamGateway(t, probeConfig)
			}
			c := newRawMCP(t, serveTest(t, g).URL+"/mcp", tc.caps)
			if msgs, _ := c.post(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`); len(msgs) != 1 || msgs[0]["error"] != nil {
				t.Fatalf("logging/setLevel answered %v", msgs)
			}
			const n = 4
			for round := range 5 { // the race, when there is one, is lost now and then
				msgs, _ := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__ticks","arguments":{"n":%d},"_meta":{"progressToken":"tok","reach/request":"round-%d"}}}`, 10+round, n, round))
				var got, want []string
				for i := 1; i <= n; i++ {
					want = append(want, fmt.Sprintf("progress %d", i), fmt.Sprintf("log tick %d", i))
				}
				want = append(want, "result")
				for _, m := range msgs {
					switch m["method"] {
					case "notifications/progress":
						if tok := path(m, "params", "progressToken"); tok != "tok" {
							t.Errorf("progress token %v, want the client's", tok)
						}
						got = append(got, fmt.Sprintf("progress %v", path(m, "params", "progress")))
					case "notifications/message":
						got = append(got, fmt.Sprintf("log %v", path(m, "params", "data")))
					case nil:
						if path(m, "result", "isError") == true {
							t.Fatalf("ticks failed: %v", m)
						}
						got = append(got, "result")
					}
				}
				if strings.Join(got, ", ") != strings.Join(want, ", ") {
					t.Fatalf("round %d: the call's stream carried\n  %s\nwant\n  %s", round, strings.Join(got, ", "), strings.Join(want, ", "))
				}
			}
		})
	}
}

// TestCancelledCallGetsNoResponse: a tools/call the client cancels with
// notifications/cancelled is cancelled upstream, and its answer stream
// ends without a response (the spec: a cancelled request is not answered).
func TestCancelledCallGetsNoResponse(t *testing.T) {
	g, p, _ := upstreamGateway(t, probeConfig)
	c := newRawMCP(t, serveTest(t, g).URL+"/mcp", `{}`)
	got := make(chan []map[string]any, 1)
	go func() {
		msgs, _ := c.post(`{"jsonrpc":"2.0","id":"slow-1","method":"tools/call","params":{"name":"up__slow","arguments":{"text":"s"}}}`)
		got <- msgs
	}()
	waitFor(t, p.started, "the slow call to start")
	c.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-1","reason":"changed my mind"}}`)
	waitFor(t, p.cancelled, "the upstream call to be cancelled")
	if msgs := <-got; len(msgs) != 0 {
		t.Errorf("the cancelled call was answered: %v", msgs)
	}
	var found bool
	for _, req := range g.rt.Requests() {
		for _, f := range req.Frames() {
			if f.Name == "up__slow" {
				found = true
				if e := f.Err(); e == nil || !strings.Contains(e.Message, "changed my mind") {
					t.Errorf("the cancelled frame's error = %+v, want the client's reason", e)
				}
			}
		}
	}
	if !found {
		t.Error("no up__slow frame")
	}
}

// TestCancelReasonThroughSDK: a call that goes through the SDK's front (the
// client can sample) and is cancelled by the client ends with the client's
// reason on its frame, as a lean call does.
func TestCancelReasonThroughSDK(t *testing.T) {
	g, p, _ := upstreamGateway(t, probeConfig)
	c := newRawMCP(t, serveTest(t, g).URL+"/mcp", `{"sampling":{}}`)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.post(`{"jsonrpc":"2.0","id":"slow-2","method":"tools/call","params":{"name":"up__slow","arguments":{"text":"s"}}}`)
	}()
	waitFor(t, p.started, "the slow call to start")
	c.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-2","reason":"the user pressed stop"}}`)
	waitFor(t, p.cancelled, "the upstream call to be cancelled")
	<-done
	var msg string
	deadline := time.Now().Add(time.Minute)
	for msg == "" && time.Now().Before(deadline) {
		for _, req := range g.rt.Requests() {
			for _, f := range req.Frames() {
				if e := f.Err(); f.Name == "up__slow" && e != nil {
					msg = e.Message
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(msg, "the user pressed stop") {
		t.Errorf("the cancelled frame's error = %q, want the client's reason", msg)
	}
	if g.front.FastCalls() != 0 {
		t.Errorf("the call took the lean front; the test needs the SDK's")
	}
}

// stdioGateway is a gateway in front of the probe served over stdio (the
// test binary again), as "up".
func stdioGateway(t *testing.T) *Gateway {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return newTestGateway(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", Command: []string{exe}, Env: map[string]config.Secret{"REACH_TEST_STDIO_UPSTREAM": "1"}}}})
}

// logsOf lists the log messages of an answer.
func logsOf(msgs []map[string]any) []string {
	var out []string
	for _, m := range msgs {
		if m["method"] == "notifications/message" {
			out = append(out, fmt.Sprint(path(m, "params", "data")))
		}
	}
	return out
}

// TestSharedSessionLogsStayWithTheirClient: on the one session of a stdio
// upstream, a log message that does not name its call while two clients
// have calls in flight goes to neither, never to the other client.
func TestSharedSessionLogsStayWithTheirClient(t *testing.T) {
	g := stdioGateway(t)
	url := serveTest(t, g).URL + "/mcp"
	a, b := newRawMCP(t, url, `{}`), newRawMCP(t, url, `{}`)
	for _, c := range []*rawMCP{a, b} {
		c.post(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`)
	}
	// Alone, a client gets its call's messages.
	if got := logsOf(first(b.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"up__chatty","arguments":{"tag":"solo","ms":0},"_meta":{"progressToken":"p"}}}`))); strings.Join(got, ",") != "solo-1,solo-2" {
		t.Fatalf("a client alone got logs %v", got)
	}
	gotA := make(chan []string, 1)
	go func() {
		gotA <- logsOf(first(a.post(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"up__chatty","arguments":{"tag":"A","ms":400},"_meta":{"progressToken":"p"}}}`)))
	}()
	time.Sleep(100 * time.Millisecond) // A is in its wait; B still waits when A logs again
	gotB := logsOf(first(b.post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"up__chatty","arguments":{"tag":"B","ms":600},"_meta":{"progressToken":"p"}}}`)))
	la := <-gotA
	for _, m := range gotB {
		if strings.HasPrefix(m, "A-") {
			t.Errorf("client B got client A's log message %q (B's: %v)", m, gotB)
		}
	}
	for _, m := range la {
		if strings.HasPrefix(m, "B-") {
			t.Errorf("client A got client B's log message %q (A's: %v)", m, la)
		}
	}
}

func first(msgs []map[string]any, _ http.Header) []map[string]any { return msgs }

// TestSlowClientDoesNotBlockStdioUpstream: a client that stops reading its
// call's stream while the upstream floods it with progress holds up its
// own call only; another client's call through the same stdio upstream
// still gets its answer.
func TestSlowClientDoesNotBlockStdioUpstream(t *testing.T) {
	g := stdioGateway(t)
	srv := serveTest(t, g)
	a := newRawMCP(t, srv.URL+"/mcp", `{}`)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"up__ticks","arguments":{"n":4000,"pad":8000},"_meta":{"progressToken":"flood"}}}`
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%s: %s\r\n%s: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s",
		mcpwire.HeaderSession, a.sid, mcpwire.HeaderProtocol, len(body), body)
	// This client never reads; give the flood time to fill the buffers.
	time.Sleep(time.Second)
	b := newRawMCP(t, srv.URL+"/mcp", `{}`)
	answered := make(chan []map[string]any, 1)
	go func() {
		answered <- first(b.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"still here"}}}`))
	}()
	select {
	case msgs := <-answered:
		if len(msgs) != 1 || !strings.Contains(fmt.Sprint(msgs[0]), "echo: still here") {
			t.Errorf("the other client's call answered %v", msgs)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a client that does not read its stream blocked another client's call through the stdio upstream")
	}
}

// TestLogLevelAfterReconnect: a client's logging level still holds after
// the upstream's shared session is replaced (a restart, a 404); an unknown
// level is refused, not passed upstream.
func TestLogLevelAfterReconnect(t *testing.T) {
	g, probe, _ := upstreamGateway(t, probeConfig)
	c := newRawMCP(t, serveTest(t, g).URL+"/mcp", `{}`)
	if msgs, _ := c.post(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"bogus"}}`); len(msgs) != 1 || path(msgs[0], "error", "code") != float64(-32602) {
		t.Errorf("an unknown level answered %v, want invalid params", msgs)
	} else if m, _ := path(msgs[0], "error", "message").(string); !strings.Contains(m, "use debug, info, notice, warning, error, critical, alert or emergency") {
		t.Errorf("an unknown level answered %q, want the levels as a reader reads them", m) // it printed a Go list
	}
	c.post(`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"info"}}`)
	call := func(tag string) []string {
		return logsOf(first(c.post(`{"jsonrpc":"2.0","id":"` + tag + `","method":"tools/call","params":{"name":"up__chatty","arguments":{"tag":"` + tag + `","ms":0}}}`)))
	}
	if got := call("before"); len(got) != 2 {
		t.Fatalf("logs before the reconnect: %v", got)
	}
	reopened := endUpstreamSessions(probe.server) // the next call gets a 404 and a new session
	if got := call("after"); strings.Join(got, ",") != "after-1,after-2" {
		t.Errorf("logs after the upstream session was replaced: %v, want after-1 and after-2", got)
	}
	if !reopened() {
		t.Error("the gateway made no new session with the upstream")
	}
}

// TestSamplingOnStandaloneStream: a sampling request an upstream sends
// outside the call's stream (its standalone GET stream) on the session of
// a client's own still reaches that client, as a model frame of the call.
func TestSamplingOnStandaloneStream(t *testing.T) {
	g, _, _ := upstreamGateway(t, probeConfig)
	c := mcp.NewClient(&mcp.Implementation{Name: "sampler", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "from the client"}}, nil
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: serveTest(t, g).URL + "/mcp"},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, text := callText(t, cs, "up__sample_detached", map[string]any{}, mcp.Meta{link.MetaRequest: "detached"})
	if res.IsError || text != "sampled: from the client" {
		t.Fatalf("up__sample_detached = %q", text)
	}
	r, _ := g.rt.Lookup("detached")
	var model *reach.Frame
	for _, f := range r.Frames() {
		if f.Kind == reach.ModelFrame {
			model = f
		}
	}
	if model == nil || model.Parent == nil || model.Parent.Name != "up__sample_detached" {
		t.Errorf("model frame %+v, want one under the tool call", model)
	}
}

// TestOddRequestIDsAreRefused: a tools/call whose id the SDK refuses (null,
// an object, true, an array) is refused on the lean path too, and runs
// nothing.
func TestOddRequestIDsAreRefused(t *testing.T) {
	g, p, _ := upstreamGateway(t, probeConfig)
	url := serveTest(t, g).URL + "/mcp"
	c := newRawMCP(t, url, `{}`)
	if msgs, _ := c.post(`{"jsonrpc":"2.0","id":"ok","method":"tools/call","params":{"name":"up__echo","arguments":{"text":"x"}}}`); len(msgs) != 1 || msgs[0]["result"] == nil {
		t.Fatalf("a call with a string id: %v", msgs)
	}
	ran, hits := len(p.metas), g.front.FastCalls()
	for _, id := range []string{`null`, `{"a":1}`, `true`, `[1]`} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"x"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcpwire.HeaderSession, c.sid)
		req.Header.Set(mcpwire.HeaderProtocol, "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "echo: x") {
			t.Errorf("id %s: the call ran: %d %s", id, resp.StatusCode, body)
		}
	}
	if len(p.metas) != ran || g.front.FastCalls() != hits {
		t.Errorf("calls with odd ids ran (upstream calls %d -> %d, lean hits %d -> %d)", ran, len(p.metas), hits, g.front.FastCalls())
	}
}
