package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/front"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client of the HTTP+SSE transport (protocol 2024-11-05, which reach
// offers), pinned before Streamable HTTP came: the MCP TypeScript SDK's
// SSEClientTransport, OpenAI Agents' MCPServerSSE, a config's "type":
// "sse". It opens GET /sse, is told where to POST, and reads its answers
// from the stream; its session is one request, as a Streamable HTTP one.
func TestLegacySSE(t *testing.T) {
	g, _, _ := upstreamGateway(t, probeConfig+"tools:\n  up__slow: {access: forbidden}\n")
	url := serveTest(t, g).URL + "/sse"
	c := mcp.NewClient(&mcp.Implementation{Name: "sse-client", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.SSEClientTransport{Endpoint: url, HTTPClient: http.DefaultClient}, nil)
	if err != nil {
		t.Fatalf("connect over SSE: %v", err)
	}
	defer cs.Close()
	names := map[string]bool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names[tool.Name] = true
	}
	if !names["up__echo"] || names["up__slow"] {
		t.Errorf("tools/list = %v, want up__echo and not the forbidden up__slow", names)
	}
	var reqs []string
	for i := range 2 {
		res, got := callText(t, cs, "up__echo", map[string]any{"text": "same"}, nil)
		if res.IsError || got != "echo: same" {
			t.Fatalf("call %d: %q", i, got)
		}
		id, _ := res.Meta[link.MetaRequest].(string)
		reqs = append(reqs, id)
	}
	if reqs[0] == "" || reqs[0] != reqs[1] {
		t.Errorf("the session's calls ran in requests %v, want one", reqs)
	}
	// The third identical call with the same result is the session's loop.
	res, got := callText(t, cs, "up__echo", map[string]any{"text": "same"}, nil)
	if !res.IsError || !strings.Contains(got, "already ran 2 times") {
		t.Errorf("third identical call: isError %v, %q; want refused as a loop", res.IsError, got)
	}
	res, got = callText(t, cs, "up__slow", map[string]any{"text": "x"}, nil)
	if !res.IsError || !strings.Contains(got, "may not call up__slow") {
		t.Errorf("forbidden tool: isError %v, %q; want refused", res.IsError, got)
	}
}

// With auth, an SSE session is its opener's: another principal's POST to
// its endpoint is refused, and the opener's calls run as the opener.
func TestLegacySSEOwned(t *testing.T) {
	_, url, keys, _ := sessionGateway(t)
	c := mcp.NewClient(&mcp.Implementation{Name: "sse-client", Version: "1"}, nil)
	alice := &http.Client{Transport: keyTransport{"Authorization", "Bearer " + keys["alice@acme"]}}
	cs, err := c.Connect(context.Background(), &mcp.SSEClientTransport{Endpoint: url + "/sse", HTTPClient: alice}, nil)
	if err != nil {
		t.Fatalf("connect over SSE: %v", err)
	}
	defer cs.Close()
	res, got := callText(t, cs, "get_order", map[string]any{"order_id": "1001"}, nil)
	if res.IsError {
		t.Fatalf("alice's call: %q", got)
	}
	// The call ran as alice: its request is hers to read, not bob's (of
	// another tenant: as an id no request has).
	reqID, _ := res.Meta[link.MetaRequest].(string)
	for who, want := range map[string]int{"alice@acme": http.StatusOK, "bob@globex": http.StatusNotFound} {
		r, _ := http.NewRequest("GET", url+"/v1/requests/"+reqID, nil)
		r.Header.Set("Authorization", "Bearer "+keys[who])
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s reads request %q of alice's SSE session: %d, want %d", who, reqID, resp.StatusCode, want)
		}
	}

	// A stream of alice's own, read up to its endpoint event.
	endpoint := openSSE(t, alice, url)
	post := func(key string) int {
		r, _ := http.NewRequest("POST", endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post(keys["bob@globex"]); got != http.StatusForbidden {
		t.Errorf("bob's POST to alice's SSE session: %d, want 403", got)
	}
	if got := post(keys["alice@globex"]); got != http.StatusForbidden {
		t.Errorf("alice of another tenant's POST: %d, want 403", got)
	}
	if got := post(keys["alice@acme"]); got != http.StatusAccepted {
		t.Errorf("alice's POST to her session: %d, want 202", got)
	}
}

// An SSE client that goes away (its stream closed: the process ended, the
// network dropped) has its calls in flight cancelled, as a Streamable HTTP
// client's whose POST closes: the stream is the only way it can still say
// so. The SDK's close of the session waits for them instead.
func TestLegacySSEClosedStreamCancels(t *testing.T) {
	g, p, _ := upstreamGateway(t, probeConfig)
	url := serveTest(t, g).URL
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/sse", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	_, endpoint, ok := strings.Cut(string(buf[:n]), "data: ")
	if !ok {
		t.Fatalf("no endpoint event: %q", buf[:n])
	}
	endpoint = url + strings.TrimSpace(endpoint)
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"gone","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up__slow","arguments":{"text":"x"}}}`,
	} {
		resp, err := http.Post(endpoint, "application/json", strings.NewReader(msg))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST %s: %d", msg, resp.StatusCode)
		}
	}
	waitFor(t, p.started, "the slow call to start")
	cancel() // the client goes away
	select {
	case <-p.cancelled:
	case <-time.After(20 * time.Second):
		t.Fatal("the call of a client whose stream closed ran on: it was not cancelled")
	}
}

// An SSE client whose stream broke (a restart of reach, a network drop)
// reopens it as EventSource does, of itself, and goes on posting to the
// endpoint the new stream names without initializing again: the
// TypeScript SDK 1.x does, and a server of that SDK answers. reach
// initializes the new session on the client's behalf (protocol 2024-11-05),
// its answer to that kept off the stream, rather than refusing every call
// as made during the session's initialization.
func TestLegacySSEResumesAfterReconnect(t *testing.T) {
	g, _, _ := upstreamGateway(t, probeConfig)
	url := serveTest(t, g).URL
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/sse", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	next := func() string { // the data of the stream's next event
		t.Helper()
		data := ""
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream ended: %v", err)
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = strings.TrimSpace(d)
			}
			if line == "\n" && data != "" {
				return data
			}
		}
	}
	endpoint := url + next()
	resp2, err := http.Post(endpoint, "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"again"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusAccepted {
		t.Fatalf("POST: %d", resp2.StatusCode)
	}
	var msg struct {
		ID     any `json:"id"`
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	data := next()
	if err := json.Unmarshal([]byte(data), &msg); err != nil {
		t.Fatalf("event %q: %v", data, err)
	}
	if msg.ID != float64(7) {
		t.Fatalf("the stream's first message is %s, want the answer to the client's call (id 7)", data)
	}
	if msg.Error != nil || msg.Result == nil || msg.Result.IsError || len(msg.Result.Content) == 0 || msg.Result.Content[0].Text != "echo: again" {
		t.Errorf("the call on a reopened stream got %s, want its result", data)
	}
}

// A POST whose number id the SDK would answer as another (1.5 as 1, a
// 19-digit integer rounded) is refused before it runs, as on /mcp: over
// SSE its answer would come on the stream under an id its client never
// matches. An id the SDK carries as sent is taken.
func TestLegacySSEMangledIDRefused(t *testing.T) {
	g, _, _ := upstreamGateway(t, probeConfig)
	url := serveTest(t, g).URL
	endpoint := openSSE(t, http.DefaultClient, url)
	post := func(id string) (int, string) {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"x"}}}`
		r, _ := http.NewRequest("POST", endpoint, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := make([]byte, 512)
		n, _ := resp.Body.Read(b)
		return resp.StatusCode, string(b[:n])
	}
	for _, id := range []string{"1.5", "1234567890123456789", "-9007199254740993"} {
		code, body := post(id)
		if code != http.StatusBadRequest || !strings.Contains(body, "string id") {
			t.Errorf("id %s: %d %q, want 400 saying to send a string id", id, code, body)
		}
	}
	if code, body := post("7"); code != http.StatusAccepted {
		t.Errorf("id 7: %d %q, want 202", code, body)
	}
}

// openSSE opens a GET /sse stream at url with client, reads it up to its
// endpoint event and returns the endpoint's URL; the stream closes when
// the test ends.
func openSSE(t *testing.T, client *http.Client, url string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/sse", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	_, endpoint, ok := strings.Cut(string(buf[:n]), "data: ")
	if !ok {
		t.Fatalf("no endpoint event: %q", buf[:n])
	}
	return url + strings.TrimSpace(endpoint)
}

// TestLegacySSEUnansweredPingFreesSlot: an SSE client that has answered
// pings and then stops answering (a hung process, or a network that
// dropped without a word: the connection half-open, nothing to read) holds
// its slot among sessions_per_principal only until a ping goes unanswered
// for front.SSEPing; then its stream ends and a new GET /sse is served.
func TestLegacySSEUnansweredPingFreesSlot(t *testing.T) {
	was := front.SSEPing
	t.Cleanup(func() { front.SSEPing = was }) // after the gateway's cleanups: its streams read it
	front.SSEPing = 500 * time.Millisecond
	cfg, err := config.Parse([]byte("examples: true\nsessions_per_principal: 1\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTest(t, newTestGateway(t, cfg)).URL
	stop := make(chan struct{})
	endpoint, events := openSSEEvents(t, url, stop)
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"mute","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		postSSE(t, endpoint, msg)
	}
	// It answers three pings (one in time is enough to show it can), then
	// reads no more and answers nothing.
	for pings := 0; pings < 3; {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal([]byte(<-events), &m)
		if m.Method == "ping" {
			postSSE(t, endpoint, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{}}`)
			pings++
		}
	}
	close(stop) // the stream's reader stops, the connection open: nothing more is read
	get := func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", url+"/sse", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != http.StatusTooManyRequests {
		t.Fatalf("a second stream while the first holds the slot: %d, want 429", code)
	}
	for deadline := time.Now().Add(30 * time.Second); get() != http.StatusOK; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the mute client's stream still holds the slot after 30s")
		}
	}
}

// A client of the HTTP+SSE transport that answers no ping is alive as far
// as reach can tell, and keeps its stream: the AI SDK 4's MCP client
// (ai 4.3.19, experimental_createMCPClient with {type: "sse"}) takes the
// server's ping for an error ("Unsupported message type") and answers
// nothing; its stream was ended a minute after it connected, and its next
// tool call failed "Not connected". The messages are the bytes it sent.
// The stream is pinged still (a client that answers later is held to it),
// and the tool call after three unanswered pings is answered on it.
func TestLegacySSEClientAnsweringNoPingKept(t *testing.T) {
	was := front.SSEPing
	t.Cleanup(func() { front.SSEPing = was })
	front.SSEPing = 100 * time.Millisecond
	cfg, err := config.Parse([]byte("examples: true\nsessions_per_principal: 1\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTest(t, newTestGateway(t, cfg)).URL
	stop := make(chan struct{})
	defer close(stop)
	endpoint, events := openSSEEvents(t, url, stop)
	postSSE(t, endpoint, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"ai-sdk-mcp-client","version":"1.0.0"}}}`)
	postSSE(t, endpoint, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	postSSE(t, endpoint, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	for pings := 0; pings < 4; { // the first unanswered one may still wait for its answer
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("the stream of a client that answers no ping ended after %d pings", pings)
			}
			m.Method = ""
			json.Unmarshal([]byte(e), &m)
			if m.Method == "ping" {
				pings++
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no ping in 30s")
		}
	}
	postSSE(t, endpoint, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_order","arguments":{"order_id":"1001"}}}`)
	for {
		e, ok := <-events
		if !ok {
			t.Fatal("the stream ended before the tool call's answer")
		}
		m.Method, m.ID = "", nil
		json.Unmarshal([]byte(e), &m)
		if string(m.ID) == "2" && m.Method == "" {
			if m.Result.IsError || len(m.Result.Content) == 0 || !strings.Contains(m.Result.Content[0].Text, "Ada") {
				t.Fatalf("the tool call after unanswered pings: %s", e)
			}
			return
		}
	}
}

// openSSEEvents opens GET /sse at url and returns the endpoint to POST to
// and the data of the stream's message events, read until stop is closed
// (then nothing more is read, the connection left open until the test
// ends) or the stream ends (the channel is closed).
func openSSEEvents(t *testing.T, url string, stop <-chan struct{}) (string, <-chan string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/sse", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	var endpoint string
	for endpoint == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("no endpoint event: %v", err)
		}
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			endpoint = url + d
		}
	}
	events := make(chan string)
	go func() {
		defer close(events)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				select {
				case events <- d:
				case <-stop:
					return
				}
			}
		}
	}()
	return endpoint, events
}

// postSSE posts msg to an /sse session's endpoint.
func postSSE(t *testing.T, endpoint, msg string) {
	t.Helper()
	resp, err := http.Post(endpoint, "application/json", strings.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %d", msg, resp.StatusCode)
	}
}
