package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/policy/approval"
)

// TestIdleConnectionHoldsNoBuffers: a keep-alive connection waiting for
// its next request holds no buffers of fasthttp's (its reader of
// maxHeaderBytes, its writer, its request's context): they go back to
// their pools between requests. A client keeps a connection open per
// concurrent call; 128 of them held 2.5 MB of live heap, which under the
// soft memory limit was RSS or collections (docs/BENCHMARKS.md, "Memory,
// the thirteenth session").
func TestIdleConnectionHoldsNoBuffers(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory and sync.Pool's drops under -race make the heap's size no measure")
	}
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	opts := &Options{Runtime: reach.New(nil), Tools: noTools{}, Approvals: approval.New(nil), MCP: mcp,
		Model: http.NotFoundHandler(), A2A: http.NotFoundHandler(), Metrics: http.NotFoundHandler(), MaxBody: 1 << 20}
	s := NewServer(opts, context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Close()

	const conns = 64
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	req := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	call := func(c net.Conn, br *bufio.Reader) {
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(got), `"result"`) {
			t.Fatalf("answer %d %s", resp.StatusCode, got)
		}
	}
	// One connection first, so that what every server makes once (pools,
	// the first context) is in the baseline.
	first, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	call(first, bufio.NewReader(first))

	heap := func() uint64 {
		var m runtime.MemStats
		for range 3 { // sync.Pool's items go in two collections
			runtime.GC()
		}
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	var open []net.Conn
	for range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
		call(c, bufio.NewReader(c))
	}
	after := heap()
	per := (int64(after) - int64(before)) / conns
	t.Logf("%d bytes of heap per idle keep-alive connection", per)
	// Held, a connection's reader alone is maxHeaderBytes (16 KiB); what
	// is left is the server's record of the connection and the client's
	// socket in this process.
	if per > 8<<10 {
		t.Errorf("an idle keep-alive connection holds %d bytes of heap, want at most %d: fasthttp's buffers are kept between requests (ReduceMemoryUsage)", per, 8<<10)
	}
	for _, c := range open {
		c.Close()
	}
}
