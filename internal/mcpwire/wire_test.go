package mcpwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/agentreach/reach/internal/frames"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAppendToolResult: the hand-written tool result is the JSON
// encoding/json writes, equal as a value (its strings are written by
// jsonscan.AppendQuoted, byte for byte as encoding/json writes them).
func TestAppendToolResult(t *testing.T) {
	for _, res := range []*mcp.CallToolResult{
		{Content: []mcp.Content{&mcp.TextContent{Text: "echo: <one>"}}, Meta: mcp.Meta{"reach/request": "req_1", "reach/frame": "00000000000000ab", "reach/status": "success"}},
		{Content: []mcp.Content{&mcp.TextContent{Text: `{"sum": 3}`}}, StructuredContent: json.RawMessage(`{"sum": 3}`), Meta: mcp.Meta{"reach/status": "success"}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "refused"}}, IsError: true,
			Meta: mcp.Meta{"reach/status": "refused", "reach/error": map[string]any{"type": "loop", "message": "a & b"}}},
		{Content: []mcp.Content{&mcp.TextContent{Text: ""}}},
	} {
		var buf bytes.Buffer
		if !AppendToolResult(&buf, res) {
			t.Fatalf("AppendToolResult(%+v) = false", res)
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
			t.Errorf("AppendToolResult mismatch (-want +got):\n%s", diff)
		}
	}
	var buf bytes.Buffer
	if AppendToolResult(&buf, &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}}}}) || buf.Len() != 0 {
		t.Errorf("AppendToolResult took an image content")
	}
}

// TestCompleteResult: a result for a client of a protocol that types its
// results carries "resultType": "complete", as written by hand and by
// encoding/json (a result with other content), and is otherwise the same.
func TestCompleteResult(t *testing.T) {
	for _, res := range []*mcp.CallToolResult{
		{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}, Meta: mcp.Meta{"reach/status": "success"}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "refused"}}, IsError: true, Meta: mcp.Meta{"reach/status": "refused"}},
		{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}}, // not by hand
		{},
	} {
		for _, how := range []string{"WriteResponse", "MarshalJSON"} {
			var b []byte
			if how == "WriteResponse" {
				rec := httptest.NewRecorder()
				WriteResponse(rec, json.RawMessage("1"), CompleteResult{res}, nil)
				var env struct{ Result json.RawMessage }
				if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
					t.Fatalf("invalid JSON %s: %v", rec.Body.Bytes(), err)
				}
				b = env.Result
			} else {
				var err error
				if b, err = json.Marshal(CompleteResult{res}); err != nil {
					t.Fatal(err)
				}
			}
			var got, want map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("%s: invalid JSON %s: %v", how, b, err)
			}
			plain, _ := json.Marshal(res)
			json.Unmarshal(plain, &want)
			want["resultType"] = "complete"
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", how, diff)
			}
		}
	}
}

// TestHTTP reads answers the way the wire client does: chunked SSE
// with the last chunk late or already here, a length, the close.
func TestHTTP(t *testing.T) {
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
			resp := &Exchange{}
			err := readHead(br, resp)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != tc.status {
				t.Errorf("status = %d, want %d", resp.Status, tc.status)
			}
			if tc.drain != drainDone {
				// read the event only; what is left decides the drain
				buf := make([]byte, len(tc.body))
				if _, err := io.ReadFull(&resp.Body, buf); err != nil || string(buf) != tc.body {
					t.Fatalf("body = %q, %v", buf, err)
				}
				if got := resp.Body.drainBuffered(); got != tc.drain {
					t.Errorf("drainBuffered = %d, want %d", got, tc.drain)
				}
				return
			}
			b, err := io.ReadAll(&resp.Body)
			if err != nil || string(b) != tc.body {
				t.Errorf("body = %q, %v; want %q", b, err, tc.body)
			}
			if got := resp.Body.drainBuffered(); got != drainDone {
				t.Errorf("drainBuffered after the end = %d", got)
			}
		})
	}
	// Reading only the event leaves the last chunk, which drains without blocking.
	br := bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(event) + "0\r\n\r\n"))
	resp := &Exchange{}
	readHead(br, resp)
	buf := make([]byte, len(event))
	io.ReadFull(&resp.Body, buf)
	if got := resp.Body.drainBuffered(); got != drainDone || br.Buffered() != 0 {
		t.Errorf("drainBuffered = %d with %d bytes left", got, br.Buffered())
	}
}

// TestParseEnvelope: the wire scanner reads what encoding/json reads from
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
		`{"jsonrpc":"2.\u0030","id":3,"method":"tools\/call","params":{"name":"a"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`,
		`{}`,
	} {
		var want Message
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		var got Message
		if !ParseEnvelope([]byte(body), &got) {
			t.Errorf("ParseEnvelope(%s) = false", body)
			continue
		}
		if got.JSONRPC != want.JSONRPC || got.Method != want.Method || string(got.ID) != string(want.ID) || string(got.Params) != string(want.Params) {
			t.Errorf("ParseEnvelope(%s) = %+v, want %+v", body, got, want)
		}
		if len(want.Params) == 0 {
			continue
		}
		var wp, gp CallParams
		werr := json.Unmarshal(want.Params, &wp)
		gerr := ParseCallParams(got.Params, &gp)
		if (werr != nil || wp.Name == "") != (gerr != nil || gp.Name == "") {
			t.Errorf("params %s: refused %v, want %v", got.Params, gerr != nil || gp.Name == "", werr != nil || wp.Name == "")
			continue
		}
		if werr == nil && wp.Name != "" {
			if gp.RawMeta != nil { // the _meta as sent: the map it decodes to
				if err := json.Unmarshal(gp.RawMeta, &gp.Meta); err != nil {
					t.Errorf("params %s: _meta kept as %s: %v", got.Params, gp.RawMeta, err)
				}
				gp.RawMeta = nil
			}
			if diff := cmp.Diff(wp, gp, cmpopts.EquateEmpty()); diff != "" { // an empty _meta is no _meta
				t.Errorf("params %s (-want +got):\n%s", got.Params, diff)
			}
		}
	}
	for _, body := range []string{`[]`, `"s"`, `1`} {
		var got Message
		if ParseEnvelope([]byte(body), &got) {
			t.Errorf("ParseEnvelope(%s) = true", body)
		}
	}
}

// TestParseEnvelopeAllocs: reading the envelope of a tools/call or of a
// progress notification copies nothing: its version and method are the
// constants they spell.
func TestParseEnvelopeAllocs(t *testing.T) {
	for _, body := range [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"a"}}}`),
		[]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`),
	} {
		var msg Message
		if n := testing.AllocsPerRun(100, func() { msg = Message{}; ParseEnvelope(body, &msg) }); n != 0 {
			t.Errorf("ParseEnvelope(%s): %v allocations, want 0", body, n)
		}
		if msg.JSONRPC != "2.0" || msg.Method == "" {
			t.Errorf("ParseEnvelope(%s) = %+v", body, msg)
		}
	}
}

// TestReadSSEAllocs: reading an SSE answer allocates one copy of the
// event's data that the message taken holds its id and result in (a copy of
// the result and another of the id before), and with ReadSSE the message
// returned; into a caller's message, the copy alone. The reader and its
// limit are pooled. Either reads the message encoding/json reads.
func TestReadSSEAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	data := []byte(`{"jsonrpc":"2.0","id":"reach-1","result":{"content":[{"type":"text","text":"a"}]}}`)
	stream := []byte("event: message\ndata: " + string(data) + "\n\n")
	r := bytes.NewReader(stream)
	var cur SSECursor
	var got *Message
	sse := testing.AllocsPerRun(100, func() {
		r.Reset(stream)
		var err error
		if got, err = ReadSSE(r, &cur, func(*Message) bool { return true }); err != nil {
			t.Fatal(err)
		}
	})
	var into Message
	n := testing.AllocsPerRun(100, func() {
		r.Reset(stream)
		if err := ReadSSEInto(r, &cur, &into, func(*Message) bool { return true }); err != nil {
			t.Fatal(err)
		}
	})
	if sse != 2 || n != 1 {
		t.Errorf("ReadSSE: %v allocations, ReadSSEInto %v: want 2 and 1 (the message, the copy of its event's data)", sse, n)
	}
	var want Message
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*Message{got, &into} {
		if string(m.ID) != string(want.ID) || string(m.Result) != string(want.Result) || m.JSONRPC != "2.0" || m.Params != nil || m.Error != nil {
			t.Errorf("read %+v, want %+v", m, want)
		}
	}
}

// TestReadSSEKeepsWhatItReturns: the message ReadSSE returns is its own,
// not a view of the buffer it read into, which the next answer reuses (a
// call's id read back as another's under 64 concurrent clients).
func TestReadSSEKeepsWhatItReturns(t *testing.T) {
	read := func(id, text string) *Message {
		t.Helper()
		stream := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"" + id + "\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"" + text + "\"}]}}\n\n"
		var cur SSECursor
		msg, err := ReadSSE(strings.NewReader(stream), &cur, func(*Message) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	first := read("reach-1", "a")
	for i := range 100 {
		read(fmt.Sprintf("other-%03d", i), strings.Repeat("x", i))
		if string(first.ID) != `"reach-1"` || string(first.Result) != `{"content":[{"type":"text","text":"a"}]}` {
			t.Fatalf("after %d more answers, the first answer reads %s %s", i+1, first.ID, first.Result)
		}
	}
}

// TestParseAnswer: the wire reading of an upstream's answer matches
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
		var want, got Message
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		if !ParseAnswer([]byte(body), &got) {
			t.Errorf("ParseAnswer(%s) = false", body)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ParseAnswer(%s) (-want +got):\n%s", body, diff)
		}
		if len(want.Result) == 0 {
			continue
		}
		var wr, gr Result
		if err := json.Unmarshal(want.Result, &wr); err != nil {
			t.Fatal(err)
		}
		if err := gr.Parse(got.Result); err != nil {
			t.Errorf("parse(%s): %v", got.Result, err)
			continue
		}
		if string(wr.Data(nil)) != string(gr.Data(nil)) || wr.IsError != gr.IsError {
			t.Errorf("result %s: data %s isError %v, want %s %v", got.Result, gr.Data(nil), gr.IsError, wr.Data(nil), wr.IsError)
		}
	}
	for _, body := range []string{`{"jsonrpc":"2.0","id":1,"error":"x"}`, `{"jsonrpc":"2.0",`, `[1]`, `{"method":1}`} {
		var got Message
		if ParseAnswer([]byte(body), &got) {
			t.Errorf("ParseAnswer(%s) = true", body)
		}
	}
	for _, r := range []string{`{"content":{}}`, `{"isError":"yes"}`, `[]`} {
		var lr Result
		if lr.Parse([]byte(r)) == nil {
			t.Errorf("parse(%s) = nil", r)
		}
	}
}

// TestConnAlive: the liveness probe of an idle connection tells an
// open one from one the server closed or wrote to unasked, without
// blocking.
func TestConnAlive(t *testing.T) {
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
	p := &Conns{addr: ln.Addr().String()}
	dial := func() (*conn, net.Conn) {
		c, err := p.get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.nc.Close() })
		return c, <-accepted
	}
	waitFor := func(c *conn, want bool) {
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

// TestRoundTripAllocations: a call's exchange on a pooled connection
// allocates only the hook that ends it with its context: the exchange,
// the liveness probe, the hook's function and the answer's content type
// are the connection's or constants.
func TestRoundTripAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // answers each request, read to its body's end, allocating nothing
				defer c.Close()
				var in [4096]byte
				out := []byte(answer)
				for n := 0; ; {
					k, err := c.Read(in[n:])
					if err != nil {
						return
					}
					if n += k; !bytes.HasSuffix(in[:n], body) {
						continue
					}
					n = 0
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	p := NewConns("http://"+ln.Addr().String()+"/mcp", nil)
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var buf [16]byte
	call := func() {
		x, err := p.RoundTrip(ctx, Session{ID: "s1", Protocol: SessionProtocol}, body)
		if err != nil {
			t.Fatal(err)
		}
		if x.Status != 200 || x.ContentType != "application/json" {
			t.Fatalf("status %d, content type %q", x.Status, x.ContentType)
		}
		n, _ := io.ReadFull(&x.Body, buf[:2])
		if string(buf[:n]) != "{}" {
			t.Fatalf("body %q", buf[:n])
		}
		x.Release(false)
	}
	call()
	if n := testing.AllocsPerRun(200, call); n > 2 {
		t.Errorf("RoundTrip and Release: %v allocations, want at most 2 (context.AfterFunc's)", n)
	}
}

// TestSSECursor: the wire client resumes an SSE answer from the id of its
// last complete event (an event cut off by the stream's end does not
// count, as in a browser), takes any all-digit retry (capped), and treats
// reaching its size limit as an error, not as the upstream closing.
func TestSSECursor(t *testing.T) {
	response := func(m *Message) bool { return m.Method == "" && string(m.ID) == `"reach-1"` }
	for _, tc := range []struct {
		name, stream string
		lastID       string
		retry        time.Duration
		closed       bool // ErrStreamClosed: resumable
	}{
		{"cut after the id of the response", "id: s_1\ndata:\n\nid: s_2\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"reach-1\",\"result\":{}}\n", "s_1", 0, true},
		{"cut inside a line", "id: s_1\ndata:\n\nid: s_2\ndata: {\"jsonrpc\"", "s_1", 0, true},
		{"priming event only", "id: s_0\nretry: 500\ndata:\n\n", "s_0", 500 * time.Millisecond, true},
		{"huge retry", "id: s_0\nretry: 99999999999999999999\n\n", "s_0", MaxResumeDelay, true},
		{"retry not digits", "id: s_0\nretry: -5\nretry: 1e3\n\n", "s_0", 0, true},
		{"id reset by a bare id field", "id: s_0\n\nid\n\n", "", 0, false},
		{"no id", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n", "", 0, false},
	} {
		var cur SSECursor
		_, err := ReadSSE(strings.NewReader(tc.stream), &cur, response)
		if cur.LastID != tc.lastID || cur.Retry != tc.retry || errors.Is(err, ErrStreamClosed) != tc.closed {
			t.Errorf("%s: lastID %q retry %v err %v; want %q, %v, resumable %v", tc.name, cur.LastID, cur.Retry, err, tc.lastID, tc.retry, tc.closed)
		}
	}
	defer func(n int64) { MaxAnswer = n }(MaxAnswer)
	MaxAnswer = 40
	var cur SSECursor
	_, err := ReadSSE(strings.NewReader("id: s_1\ndata:\n\n"+strings.Repeat(": padding\n", 10)), &cur, response)
	if err == nil || errors.Is(err, ErrStreamClosed) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("an answer over the limit: %v, want an error saying it is too large", err)
	}
}

// TestIdleConnectionHoldsNoReader: a pooled connection holds its reader
// only during an exchange; idle, the reader is back in readers. A
// connection that was sent more than its answer is closed when released,
// not pooled.
func TestIdleConnectionHoldsNoReader(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var in [4096]byte
				for n := 0; ; {
					k, err := c.Read(in[n:])
					if err != nil {
						return
					}
					if n += k; !bytes.HasSuffix(in[:n], body) {
						continue
					}
					out := answer
					if bytes.Contains(in[:n], []byte("Mcp-Session-Id: extra")) {
						out += "HTTP/1.1 200 OK\r\n" // unasked
					}
					n = 0
					if _, err := c.Write([]byte(out)); err != nil {
						return
					}
				}
			}()
		}
	}()
	p := NewConns("http://"+ln.Addr().String()+"/mcp", nil)
	defer p.Close()
	ctx := context.Background()
	const n = 8
	var xs []*Exchange
	for range n { // n at once: n connections
		x, err := p.RoundTrip(ctx, Session{ID: "s1", Protocol: SessionProtocol}, body)
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, x)
	}
	for _, x := range xs {
		if b, err := io.ReadAll(&x.Body); err != nil || string(b) != "{}" {
			t.Fatalf("body %q, %v", b, err)
		}
		x.Release(false)
	}
	p.mu.Lock()
	idle := len(p.idle)
	for _, c := range p.idle {
		if c.br != nil {
			t.Error("an idle connection holds its reader")
		}
	}
	p.mu.Unlock()
	if idle != n {
		t.Fatalf("%d idle connections, want %d", idle, n)
	}
	for range 2 * n { // the pooled connections, each with a reader again
		x, err := p.RoundTrip(ctx, Session{ID: "s1", Protocol: SessionProtocol}, body)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(&x.Body); err != nil || string(b) != "{}" {
			t.Fatalf("body %q, %v", b, err)
		}
		x.Release(false)
	}
	x, err := p.RoundTrip(ctx, Session{ID: "extra", Protocol: SessionProtocol}, body)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(&x.Body)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if x.c.br.Buffered() > 0 { // the unasked bytes arrived with the answer or after
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the unasked bytes did not arrive")
		}
		x.c.br.Peek(1)
	}
	x.Release(false)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) != n-1 {
		t.Errorf("%d idle connections after one that had bytes past its answer, want %d (it closed)", len(p.idle), n-1)
	}
}

// TestReadSSELineEndings: an SSE answer whose lines end with LF, CR LF or
// a lone CR (all three allowed by the format, and mixed) reads the same:
// the message asked for, with the data of a multi-line event joined, the
// last complete event's id and the retry. Read whole and one byte at a
// time, so that a CR LF split across two reads is one line ending.
func TestReadSSELineEndings(t *testing.T) {
	lines := []string{
		": a comment", "retry: 700", "id: s_1", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}", "",
		"id: s_2", "data: {\"jsonrpc\":\"2.0\",", "data: \"id\":\"reach-1\",\"result\":{\"content\":[]}}", "",
		"id: s_3", "data: {\"jsonrpc\":\"2.0\",\"id\":\"reach-2\",\"result\":{}}", "", "",
	}
	response := func(m *Message) bool { return m.Method == "" }
	for _, eol := range []string{"\n", "\r\n", "\r", "mixed"} {
		var b strings.Builder
		for i, l := range lines {
			e := eol
			if eol == "mixed" {
				e = []string{"\n", "\r\n", "\r"}[i%3]
			}
			b.WriteString(l + e)
		}
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(b.String())
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			var cur SSECursor
			msg, err := ReadSSE(r, &cur, response)
			if err != nil || string(msg.ID) != `"reach-1"` || string(msg.Result) != `{"content":[]}` || cur.LastID != "s_2" || cur.Retry != 700*time.Millisecond {
				t.Errorf("endings %q (one byte at a time %v): %+v, %v, cursor %+v; want reach-1's result after s_2, retry 700ms", eol, oneByte, msg, err, cur)
			}
		}
	}
}

// TestReadSSEByteOrderMark: a byte order mark that begins a stream is
// dropped (the SSE format's rule), so the first line is still its field:
// here the event's id and its only data line.
func TestReadSSEByteOrderMark(t *testing.T) {
	for _, first := range []string{"id: s_1\n", ""} {
		body := "\xEF\xBB\xBF" + first + "data: {\"jsonrpc\":\"2.0\",\"id\":\"reach-1\",\"result\":{}}\n\n"
		var cur SSECursor
		msg, err := ReadSSE(strings.NewReader(body), &cur, func(m *Message) bool { return m.Method == "" })
		if err != nil || msg == nil || string(msg.ID) != `"reach-1"` || (first != "" && cur.LastID != "s_1") {
			t.Errorf("a stream beginning %q: %+v, %v, cursor %+v; want reach-1's result", first, msg, err, cur)
		}
	}
}

// BenchmarkReadSSE reads a tool call's answer as an upstream streams it:
// a progress notification, then the result, one event each.
func BenchmarkReadSSE(b *testing.B) {
	stream := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}\n\n" +
		"event: message\nid: s1_2\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"reach-1\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"call 12345, all fine\"}],\"isError\":false}}\n\n"
	r := strings.NewReader(stream)
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(stream)
		var cur SSECursor
		if _, err := ReadSSE(r, &cur, func(m *Message) bool { return m.Method == "" }); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadSSEBoundIsPerEvent: MaxAnswer bounds one event of an SSE
// answer, not the stream: a call's many small notifications, together
// past the bound, are read on to its response (the whole stream was
// bounded, and such a call failed as too large); one event past it fails.
func TestReadSSEBoundIsPerEvent(t *testing.T) {
	defer func(n int64) { MaxAnswer = n }(MaxAnswer)
	MaxAnswer = 1 << 10
	response := func(m *Message) bool { return m.Method == "" }
	note := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n"
	resp := "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	stream := strings.Repeat(note, 100) + resp // about 8 KiB
	var cur SSECursor
	if msg, err := ReadSSE(strings.NewReader(stream), &cur, response); err != nil || msg == nil {
		t.Fatalf("%d bytes of small events, the bound %d: %v; want the response", len(stream), MaxAnswer, err)
	}
	big := "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":\"" + strings.Repeat("x", 16<<10) + "\"}}\n\n"
	_, err := ReadSSE(strings.NewReader(big), &cur, response)
	if _, ok := errors.AsType[*TooLargeError](err); !ok {
		t.Fatalf("one event of %d bytes, the bound %d: %v; want a TooLargeError", len(big), MaxAnswer, err)
	}
}

// textMeta is a _meta value encoding/json writes by its text (a
// TextMarshaler) and mcpwire by AppendText, its text any string.
type textMeta struct{ s string }

func (m *textMeta) MarshalText() ([]byte, error)             { return []byte(m.s), nil }
func (m *textMeta) AppendText(b []byte) ([]byte, error)      { return append(b, m.s...), nil }
func (m *jsonTextMeta) MarshalJSON() ([]byte, error)         { return []byte(`{"own":true}`), nil }
func (m *jsonTextMeta) AppendText(b []byte) ([]byte, error)  { return append(b, "not this"...), nil }
func (m *failingTextMeta) MarshalText() ([]byte, error)      { return []byte(m.s), nil }
func (m *failingTextMeta) AppendText([]byte) ([]byte, error) { return nil, errors.New("no text") }

// jsonTextMeta has JSON of its own, which encoding/json writes before its
// text; failingTextMeta's AppendText fails where MarshalText does not.
type (
	jsonTextMeta    struct{}
	failingTextMeta struct{ s string }
)

// TestAppendToolResultTextMeta: a _meta value that appends its text (a
// frame id by a pointer, as the front door keeps it in its pooled answer)
// is written byte for byte as encoding/json writes it: its text quoted,
// escapes and all; a value with JSON of its own by that JSON; one whose
// AppendText fails as encoding/json writes it.
func TestAppendToolResultTextMeta(t *testing.T) {
	id := frames.ID(0xab)
	for _, v := range []any{&id, id, &textMeta{"plain"}, &textMeta{`a "quoted" <b> & ü\n`}, &textMeta{""},
		&jsonTextMeta{}, &failingTextMeta{"its text"}, (*textMeta)(nil), (*frames.ID)(nil)} {
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "t"}},
			Meta: mcp.Meta{"reach/frame": v, "reach/status": "success", "z": "last"}}
		var buf bytes.Buffer
		if !AppendToolResult(&buf, res) {
			t.Fatalf("AppendToolResult(%T) = false", v)
		}
		var out struct {
			Meta json.RawMessage `json:"_meta"`
		}
		if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
			t.Fatalf("invalid JSON %s: %v", buf.Bytes(), err)
		}
		want, err := json.Marshal(res.Meta)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Meta, want) {
			t.Errorf("%T %v: _meta\n got %s\nwant %s", v, v, out.Meta, want)
		}
	}
	var buf bytes.Buffer
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "t"}}, Meta: mcp.Meta{"reach/frame": &id}}
	if n := testing.AllocsPerRun(100, func() { buf.Reset(); AppendToolResult(&buf, res) }); n > 0 {
		t.Errorf("a frame id by a pointer is written with %v allocations, want none", n)
	}
}
