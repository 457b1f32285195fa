package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
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
	c.sid = h.Get(headerSession)
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
		req.Header.Set(headerSession, c.sid)
		req.Header.Set(headerProtocol, "2025-11-25")
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
				g = newTestGateway(t, &Config{Upstreams: []Upstream{{Name: "up", Command: []string{exe}, Env: map[string]Secret{"REACH_TEST_STDIO_UPSTREAM": "1"}}}})
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
	deadline := time.Now().Add(5 * time.Second)
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
	if g.leanHits.Load() != 0 {
		t.Errorf("the call took the lean front; the test needs the SDK's")
	}
}
