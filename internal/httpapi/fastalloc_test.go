package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/policy/approval"
)

// answersAtOnce is an MCP fast lane that answers each tools/call at once,
// with nothing of its own allocated: what the HTTP server costs a call
// is left to count.
type answersAtOnce struct{ calls atomic.Int64 }

func (a *answersAtOnce) AnswerMessage(_ context.Context, _ link.Headers, _ []byte, msg mcpwire.Message, out *bytes.Buffer) (string, bool) {
	if msg.Method != "tools/call" || string(msg.ID) != "7" {
		return "", false
	}
	a.calls.Add(1)
	out.WriteString(`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`)
	return "application/json", true
}

// TestFastLaneAllocations: a tools/call POST to /mcp that the fast lane
// answers costs the HTTP server no more allocations than when measured,
// on a kept-alive connection: the request is read, its envelope parsed
// and the answer written from pooled buffers, and the envelope is given to
// the lane as a value, on the stack (2 when a pointer to it went through
// the FastMCP interface, to the heap). The lane answers every call, and
// the client reads each answer whole.
func TestFastLaneAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	fast := &answersAtOnce{}
	opts := &Options{Runtime: reach.New(nil), Tools: noTools{}, Approvals: approval.New(nil), MCP: http.NotFoundHandler(),
		Model: http.NotFoundHandler(), A2A: http.NotFoundHandler(), Metrics: http.NotFoundHandler(), MaxBody: 1 << 20, Fast: fast}
	s := NewServer(opts, context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"q":1}}}`
	req := []byte(fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: s1\r\nContent-Length: %d\r\n\r\n%s", ln.Addr(), len(body), body)) // a Host with its port, as clients send it
	want := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`)
	// The first answer tells its length (the same for every call's).
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n := 0
	for !bytes.HasSuffix(buf[:n], want) {
		k, err := c.Read(buf[n:])
		if err != nil {
			t.Fatalf("the first answer: %v, read %q", err, buf[:n])
		}
		n += k
	}
	if !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 200 ")) {
		t.Fatalf("the first answer: %q", buf[:n])
	}
	size := n
	call := func() {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf[:size]); err != nil || !bytes.HasSuffix(buf[:size], want) {
			t.Fatalf("the answer: %v, %q", err, buf[:size])
		}
	}
	for range 20 {
		call()
	}
	allocs := testing.AllocsPerRun(500, call)
	t.Logf("a call on the fast lane costs the HTTP server %v allocations", allocs)
	if allocs > 1 {
		t.Errorf("a call on the fast lane costs the HTTP server %v allocations, want at most 1", allocs)
	}
	if got := fast.calls.Load(); got != 1+20+501 {
		t.Errorf("the fast lane answered %d calls, want %d", got, 1+20+501)
	}
}
