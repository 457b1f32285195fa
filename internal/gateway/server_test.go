package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/mcpwire"
)

// laneClient posts MCP messages on one connection of its own, as a client
// whose calls all share a connection.
type laneClient struct {
	t   *testing.T
	url string
	c   *http.Client
	sid string
}

func newLaneClient(t *testing.T, url string) *laneClient {
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}
	t.Cleanup(tr.CloseIdleConnections)
	return &laneClient{t: t, url: url, c: &http.Client{Transport: tr}}
}

// post sends body to /mcp with headers (and the session, once there is
// one) and returns the status, the body and the headers of the answer.
func (m *laneClient) post(body string, headers map[string]string) (int, string, http.Header) {
	m.t.Helper()
	req, _ := http.NewRequest("POST", m.url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcpwire.HeaderProtocol, mcpwire.SessionProtocol)
	if m.sid != "" {
		req.Header.Set(mcpwire.HeaderSession, m.sid)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := m.c.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// open initializes a session.
func (m *laneClient) open() {
	m.t.Helper()
	status, body, h := m.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	if status != 200 || h.Get(mcpwire.HeaderSession) == "" {
		m.t.Fatalf("initialize: %d %s", status, body)
	}
	m.sid = h.Get(mcpwire.HeaderSession)
	if status, body, _ := m.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); status != http.StatusAccepted {
		m.t.Fatalf("notifications/initialized: %d %s", status, body)
	}
}

func callBody(id int, query string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search_kb","arguments":{"query":%q}}}`, id, query)
}

// TestServerLanes: as served, a tools/call on a session is answered on
// the fast lane, initialize and notifications by the handler on fasthttp's
// goroutine (the connection stays there, so the client's next call is
// fast again), and any other request hands its connection to net/http,
// which serves the connection's later requests, fast calls included.
func TestServerLanes(t *testing.T) {
	g := newTestGateway(t, nil)
	srv := serveTest(t, g)
	m := newLaneClient(t, srv.URL)
	m.open()
	_, inline, handed := g.Served()
	if inline < 2 || handed != 0 {
		t.Errorf("initialize and its notification: %d inline, %d handed over; want 2 inline", inline, handed)
	}
	for i := range 3 {
		status, body, h := m.post(callBody(10+i, fmt.Sprint("refund ", i)), nil)
		if status != 200 || h.Get("Content-Type") != "application/json" || !strings.Contains(body, `"id":`+fmt.Sprint(10+i)) || strings.Contains(body, `"isError":true`) {
			t.Fatalf("call %d: %d %s %s", i, status, h.Get("Content-Type"), body)
		}
	}
	if fast, _, _ := g.Served(); fast != 3 {
		t.Errorf("%d calls on the fast lane, want 3", fast)
	}
	// A request for another route on the same connection hands it over.
	req, _ := http.NewRequest("GET", srv.URL+"/healthz", nil)
	resp, err := m.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
	before := g.front.FastCalls()
	if status, body, _ := m.post(callBody(20, "refund"), nil); status != 200 || strings.Contains(body, `"isError":true`) {
		t.Fatalf("a call after the hand-over: %d %s", status, body)
	}
	fast, _, handed := g.Served()
	if fast != 3 || handed != 1 || g.front.FastCalls() != before+1 {
		t.Errorf("after the hand-over: %d fast-lane calls (want 3), %d hand-overs (want 1), %d fast-path calls (want %d)",
			fast, handed, g.front.FastCalls(), before+1)
	}
}

// TestServerFastLaneChecks: the fast lane answers only what every check
// of the handler's middleware lets through as it is; a call that one of
// them refuses gets the handler's refusal, and its tool does not run.
func TestServerFastLaneChecks(t *testing.T) {
	g := newTestGateway(t, nil)
	ran := 0
	g.rt.MustRegister(g.prepare(reach.Tool{Name: "count", Access: reach.Read, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		ran++
		return json.RawMessage(`"ok"`), nil
	}}))
	g.front.SyncTools()
	srv := serveTest(t, g)
	m := newLaneClient(t, srv.URL)
	m.open()
	call := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"count","arguments":{}}}`
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  int
		code    string
	}{
		{"cross-origin", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, 403, "cross_origin"},
		{"cross-origin without Sec-Fetch-Site", map[string]string{"Origin": "https://evil.example"}, 403, "cross_origin"},
		{"foreign host", map[string]string{"Host": "attacker.example"}, 403, "not_local"},
	} {
		other := newLaneClient(t, srv.URL) // a hand-over would keep m's connection
		other.sid = m.sid
		status, body, _ := other.post(call, tc.headers)
		if status != tc.status || !strings.Contains(body, `"`+tc.code+`"`) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, body, tc.status, tc.code)
		}
	}
	if ran != 0 {
		t.Fatalf("refused calls ran the tool %d times", ran)
	}
	if fast, _, _ := g.Served(); fast != 0 {
		t.Errorf("the fast lane answered %d refused calls", fast)
	}
	// Same-origin requests of a browser pass cross-origin protection: the
	// handler serves them.
	same := newLaneClient(t, srv.URL)
	same.sid = m.sid
	if status, body, _ := same.post(call, map[string]string{"Sec-Fetch-Site": "same-origin"}); status != 200 || !strings.Contains(body, "ok") || ran != 1 {
		t.Errorf("a same-origin call: %d %s (ran %d)", status, body, ran)
	}
	if status, body, _ := m.post(call, nil); status != 200 || ran != 2 {
		t.Errorf("a plain call: %d %s (ran %d)", status, body, ran)
	}
	if fast, _, _ := g.Served(); fast != 1 {
		t.Errorf("%d calls on the fast lane, want 1", fast)
	}
}

// TestServerFastLaneCredentials: with authentication, the fast lane
// answers a call whose credentials authenticate, as their owner; any
// other gets the handler's 401.
func TestServerFastLaneCredentials(t *testing.T) {
	g, srvURL, keys, _ := sessionGateway(t)
	m := newLaneClient(t, srvURL)
	auth := map[string]string{"Authorization": "Bearer " + keys["alice@acme"]}
	status, body, h := m.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, auth)
	if status != 200 {
		t.Fatalf("initialize: %d %s", status, body)
	}
	m.sid = h.Get(mcpwire.HeaderSession)
	m.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, auth)
	for _, bad := range []map[string]string{nil, {"Authorization": "Bearer rk_nope"}, {"X-Reach-Key": "rk_nope"}} {
		if status, body, _ := m.post(callBody(3, "x"), bad); status != 401 || !strings.Contains(body, "unauthenticated") {
			t.Errorf("credentials %v: %d %s, want 401", bad, status, body)
		}
	}
	bob := newLaneClient(t, srvURL) // the hand-over would keep m's connection
	bob.sid = m.sid
	if status, body, _ := bob.post(callBody(4, "x"), map[string]string{"X-Reach-Key": keys["bob@globex"]}); status != 403 || !strings.Contains(body, "not_your_session") {
		t.Errorf("another principal's call: %d %s, want 403 not_your_session", status, body)
	}
	if fast, _, _ := g.Served(); fast != 0 {
		t.Fatalf("the fast lane answered %d refused calls", fast)
	}
	for i, good := range []map[string]string{auth, {"X-Reach-Key": keys["alice@acme"]}} {
		if status, body, _ := m.post(callBody(5, fmt.Sprint("x", i)), good); status != 200 || strings.Contains(body, `"isError":true`) {
			t.Errorf("the owner's call: %d %s", status, body)
		}
	}
	if fast, _, _ := g.Served(); fast != 2 {
		t.Errorf("%d calls on the fast lane, want 2", fast)
	}
}

// TestServerBodyLimit: a body over the limit is answered 413 as the
// handler does, after the checks that come before the limit there.
func TestServerBodyLimit(t *testing.T) {
	g := newTestGateway(t, &config.Config{MaxBodyBytes: 300})
	srv := serveTest(t, g)
	m := newLaneClient(t, srv.URL)
	m.open()
	big := callBody(7, strings.Repeat("q", 400))
	if status, body, _ := m.post(big, nil); status != 413 || !strings.Contains(body, "The request body is ") || !strings.Contains(body, "body_too_large") {
		t.Errorf("a call over the limit: %d %s", status, body)
	}
	if status, body, _ := m.post(big, map[string]string{"Host": "attacker.example"}); status != 403 || !strings.Contains(body, "not_local") {
		t.Errorf("a call over the limit from a foreign host: %d %s, want 403 not_local", status, body)
	}
	if status, body, _ := m.post(callBody(8, "small"), nil); status != 200 {
		t.Errorf("a call under the limit after them: %d %s", status, body)
	}
}

// TestServerPipelined: requests a client sends before their answers come
// are all answered, in order, across a hand-over to net/http.
func TestServerPipelined(t *testing.T) {
	g := newTestGateway(t, nil)
	srv := serveTest(t, g)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req := func(method, path, body string) string {
		return fmt.Sprintf("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", method, path, len(body), body)
	}
	io.WriteString(c, req("POST", "/mcp", init)+req("GET", "/healthz", "")+req("GET", "/v1/tools", "")+req("POST", "/mcp", init))
	br := bufio.NewReader(c)
	for i, want := range []string{"protocolVersion", `"status"`, `"tools"`, "protocolVersion"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("answer %d: %d %s, want %s", i, resp.StatusCode, b, want)
		}
	}
}

// TestServerHeaderLimit: a request's headers are taken up to 16 KiB and
// refused beyond, by fasthttp and by net/http once it serves the
// connection (net/http may have read up to 4 KiB of a kept connection's
// next request before it applies its limit, so the refused size is 24 KiB).
func TestServerHeaderLimit(t *testing.T) {
	g := newTestGateway(t, nil)
	srv := serveTest(t, g)
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	kept := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	for i, tc := range []struct {
		c      *http.Client
		size   int
		status int
	}{{fresh, 15 << 10, 200}, {fresh, 17 << 10, 431}, {kept, 15 << 10, 200}, {kept, 15 << 10, 200}, {kept, 24 << 10, 431}} {
		req, _ := http.NewRequest("GET", srv.URL+"/healthz", nil)
		req.Header.Set("X-Padding", strings.Repeat("p", tc.size))
		resp, err := tc.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("case %d: a %d-byte header: %d, want %d", i, tc.size, resp.StatusCode, tc.status)
		}
	}
}

// TestServerSessionlessDisconnectCancels: a sessionless client ends a
// call by closing its request (the protocol has no other way). On the fast
// lane the connection is watched while the call runs; on a connection
// already handed over, net/http sees the close. On both, the tool's context
// ends as net/http's request's does (context.Canceled) and the call's
// frame ends alike.
func TestServerSessionlessDisconnectCancels(t *testing.T) {
	type ending struct {
		cause error
		state reach.State
		err   string
	}
	endings := map[string]ending{}
	for _, lane := range []string{"fast lane", "net/http"} {
		t.Run(lane, func(t *testing.T) {
			g := newTestGateway(t, nil)
			started, ended := make(chan struct{}), make(chan error, 1)
			g.rt.MustRegister(g.prepare(reach.Tool{Name: "wait", Access: reach.Read, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				close(started)
				<-ctx.Done()
				ended <- context.Cause(ctx)
				return nil, context.Cause(ctx)
			}}))
			g.front.SyncTools()
			srv := serveTest(t, g)
			m := newLaneClient(t, srv.URL)
			if lane == "net/http" {
				m.get("/healthz") // hands the connection over
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() {
				if resp, err := m.c.Do(sessionlessRequest(ctx, srv.URL, 1, "wait")); err == nil {
					resp.Body.Close()
				}
			}()
			waitClosed(t, started, "the call to start")
			cancel()
			var e ending
			select {
			case e.cause = <-ended:
			case <-time.After(10 * time.Second):
				t.Fatal("the call's context did not end after the client closed its request")
			}
			f := waitFrame(t, g, "wait")
			if lane == "fast lane" {
				// Counted once answered, after the tool saw its context end.
				waitUntil(t, "the call to be counted on the fast lane", func() bool { fast, _, _ := g.Served(); return fast == 1 })
			}
			fast, _, handed := g.Served()
			if lane == "fast lane" && (fast != 1 || handed != 0) || lane == "net/http" && (fast != 0 || handed != 1) {
				t.Errorf("%d calls on the fast lane, %d hand-overs", fast, handed)
			}
			e.state = f.State()
			if fe := f.Err(); fe != nil {
				e.err = fe.Message
			}
			endings[lane] = e
		})
	}
	if e := endings["fast lane"]; e.cause != context.Canceled || e != endings["net/http"] {
		t.Errorf("a call whose client went ended %+v on the fast lane, %+v on net/http; want the same, cause context.Canceled", e, endings["net/http"])
	}
}

// sessionlessBody is a sessionless tools/call of tool, with id (search_kb
// with a query of its own, any other tool with the id: the loop guard
// refuses a third call of the same).
func sessionlessBody(id int, tool string) string {
	args := fmt.Sprintf(`{"n":%d}`, id)
	if tool == "search_kb" {
		args = fmt.Sprintf(`{"query":"refund %d"}`, id)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{`, id, tool, args) +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
}

// sessionlessRequest is a sessionless tools/call of tool to the server at
// url, as the SDK's client sends it.
func sessionlessRequest(ctx context.Context, url string, id int, tool string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/mcp", strings.NewReader(sessionlessBody(id, tool)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcpwire.HeaderProtocol, mcpwire.StatelessProtocol)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	return req
}

// get sends a GET on the client's connection and reads the answer.
func (m *laneClient) get(path string) {
	m.t.Helper()
	resp, err := m.c.Get(m.url + path)
	if err != nil {
		m.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		m.t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
}

// waitFrame waits for the first frame of tool to end and returns it.
func waitFrame(t *testing.T, g *Gateway, tool string) *reach.Frame {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, req := range g.rt.Requests() {
			for _, f := range req.Frames() {
				if f.Name == tool && !f.Ended().IsZero() {
					return f
				}
			}
		}
	}
	t.Fatalf("no frame of %s ended", tool)
	return nil
}

// TestServerSessionlessLanes: the sessionless protocol's requests stay on
// fasthttp: its discovery and lists inline, its calls on the fast lane;
// and a session's call on a connection that carried sessionless ones is
// on the fast lane too.
func TestServerSessionlessLanes(t *testing.T) {
	g := newTestGateway(t, nil)
	srv := serveTest(t, g)
	m := newLaneClient(t, srv.URL)
	for i := range 3 {
		resp, err := m.c.Do(sessionlessRequest(t.Context(), srv.URL, 10+i, "search_kb"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(b), `"id":`+fmt.Sprint(10+i)) ||
			!strings.Contains(string(b), `"resultType":"complete"`) || strings.Contains(string(b), `"isError":true`) {
			t.Fatalf("sessionless call %d: %d %s %s", i, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
	if fast, _, handed := g.Served(); fast != 3 || handed != 0 || g.front.FastCalls() != 3 {
		t.Errorf("3 sessionless calls: %d on the fast lane, %d hand-overs, %d fast-path calls", fast, handed, g.front.FastCalls())
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(list))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcpwire.HeaderProtocol, mcpwire.StatelessProtocol)
	req.Header.Set("Mcp-Method", "tools/list")
	resp, err := m.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "search_kb") {
		t.Fatalf("sessionless tools/list: %d %s", resp.StatusCode, b)
	}
	m.open()
	if status, body, _ := m.post(callBody(20, "refund"), nil); status != 200 || strings.Contains(body, `"isError":true`) {
		t.Fatalf("a session's call: %d %s", status, body)
	}
	if fast, _, handed := g.Served(); fast != 4 || handed != 0 {
		t.Errorf("after the list and a session's call on the same connection: %d on the fast lane (want 4), %d hand-overs (want 0)", fast, handed)
	}
}

// TestServerSessionlessPipelined: a request the client sends while its
// sessionless call runs is not taken for a close (the call ends as it
// would), and is answered after it, on the connection; and one sent with
// it, in the same packet, too.
func TestServerSessionlessPipelined(t *testing.T) {
	g := newTestGateway(t, nil)
	started, release := make(chan struct{}, 1), make(chan struct{})
	var cause error
	g.rt.MustRegister(g.prepare(reach.Tool{Name: "hold", Access: reach.Read, Reentrancy: reach.Reentrant, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			cause = context.Cause(ctx)
		}
		return json.RawMessage(`"held"`), nil
	}}))
	g.front.SyncTools()
	srv := serveTest(t, g)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	raw := func(id int, tool string) string {
		body := sessionlessBody(id, tool)
		return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
			"Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: %s\r\nContent-Length: %d\r\n\r\n%s", tool, len(body), body)
	}
	io.WriteString(c, raw(1, "hold"))
	<-started
	io.WriteString(c, raw(2, "search_kb")+raw(3, "search_kb"))
	time.Sleep(50 * time.Millisecond) // for the watch to see them, if it would take them for a close
	close(release)
	br := bufio.NewReader(c)
	for i, want := range []string{`"id":1,`, `"id":2,`, `"id":3,`} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) || strings.Contains(string(b), `"isError":true`) {
			t.Errorf("answer %d: %d %s, want %s", i, resp.StatusCode, b, want)
		}
	}
	if cause != nil {
		t.Errorf("the held call was cancelled (%v) by the requests behind it", cause)
	}
	if fast, _, handed := g.Served(); fast != 3 || handed != 0 {
		t.Errorf("%d calls on the fast lane (want 3), %d hand-overs", fast, handed)
	}
}

// TestServerSessionlessLeavesNothing: after sessionless calls on the fast
// lane, answered or cancelled by their client's close, no watch of a
// connection is left running.
func TestServerSessionlessLeavesNothing(t *testing.T) {
	g := newTestGateway(t, nil)
	started := make(chan struct{}, 1)
	g.rt.MustRegister(g.prepare(reach.Tool{Name: "wait", Access: reach.Read, Reentrancy: reach.Reentrant, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}}))
	g.rt.MustRegister(g.prepare(reach.Tool{Name: "echo", Access: reach.Read, Reentrancy: reach.Reentrant, Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		return args, nil // new each time: the loop guard lets the calls be
	}}))
	g.front.SyncTools()
	srv := serveTest(t, g)
	m := newLaneClient(t, srv.URL)
	for i := range 20 {
		if i%5 == 4 {
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				if resp, err := m.c.Do(sessionlessRequest(ctx, srv.URL, i, "wait")); err == nil {
					resp.Body.Close()
				}
			}()
			select {
			case <-started:
			case <-done:
				t.Fatalf("call %d ended before its tool started", i)
			}
			cancel()
			<-done
			continue
		}
		resp, err := m.c.Do(sessionlessRequest(t.Context(), srv.URL, i, "echo"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Contains(string(b), `"isError":true`) {
			t.Fatalf("call %d: %d %s", i, resp.StatusCode, b)
		}
	}
	// The last cancelled call may still be on its way out.
	waitUntil(t, "20 calls on the fast lane", func() bool { fast, _, _ := g.Served(); return fast == 20 })
	if _, _, handed := g.Served(); handed != 0 {
		t.Errorf("%d hand-overs", handed)
	}
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "(*hangup).watch") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a watch of a connection is still running:\n%s", stacks)
		}
	}
}

func waitClosed(t *testing.T, c chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestServerNoBodyBeforeAuth: with authentication, a request whose headers
// do not authenticate is answered 401 without its body being read past a
// small bound: the whole body came before any check on both HTTP servers
// (fasthttp reads a request whole before its handler runs; the body limit
// read a chunked one whole before the authentication), and a client
// without credentials made the gateway hold max_body_bytes per connection
// it opened (40 connections, 160 MB). One with credentials sends its
// large body as before.
func TestServerNoBodyBeforeAuth(t *testing.T) {
	_, srvURL, _, keys := authGateway(t, "")
	addr := strings.TrimPrefix(srvURL, "http://")
	const declared = 2 << 20
	// answer sends head and then, for as long as the gateway does not
	// answer, up to 1 MiB of the body (never all of it), and returns the
	// status of the last answer of n.
	answer := func(t *testing.T, head string, chunked bool, n int) int {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second)) // a hang guard
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
		go func() {
			piece := strings.Repeat("x", 16<<10)
			if chunked {
				piece = fmt.Sprintf("%x\r\n%s\r\n", len(piece), piece)
			}
			for range 64 {
				if _, err := io.WriteString(c, piece); err != nil {
					return // the gateway answered and closed
				}
			}
		}()
		br := bufio.NewReader(c)
		status := 0
		for range n {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer before the body's end: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
		}
		return status
	}
	host := "Host: " + addr + "\r\nContent-Type: application/json\r\n"
	for _, tc := range []struct {
		name, head string
		chunked    bool
		n, want    int
	}{
		{"declared", "POST /v1/calls HTTP/1.1\r\n" + host + fmt.Sprintf("Content-Length: %d\r\n\r\n", declared), false, 1, 401},
		{"declared mcp", "POST /mcp HTTP/1.1\r\n" + host + fmt.Sprintf("Content-Length: %d\r\n\r\n", declared), false, 1, 401},
		{"wrong key", "POST /v1/calls HTTP/1.1\r\n" + host + "X-Reach-Key: rk_wrong\r\n" + fmt.Sprintf("Content-Length: %d\r\n\r\n", declared), false, 1, 401},
		// fasthttp forgets a chunked request that runs over, and which
		// bound it ran over: a 413 that names both.
		{"chunked", "POST /v1/calls HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n", true, 1, 413},
		// net/http's: the connection is handed over at its first request.
		{"chunked on net/http", "GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\n\r\nPOST /v1/calls HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n", true, 2, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if status := answer(t, tc.head, tc.chunked, tc.n); status != tc.want {
				t.Errorf("got %d, want %d", status, tc.want)
			}
		})
	}
	// The same with credentials: the body is read, and the call refused
	// for what it says, not for its size.
	body := `{"tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"` + strings.Repeat("q", 200<<10) + `"}}]}`
	req, _ := http.NewRequest("POST", srvURL+"/v1/calls", strings.NewReader(body))
	req.Header.Set("X-Reach-Key", keys["bob"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a large body with credentials: %d, want 200", resp.StatusCode)
	}
}
