package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/policy/approval"
)

// TestTwoFramingsRefused: a request that carries both Content-Length and
// Transfer-Encoding is answered 400 and its connection closed (RFC 9112
// §6.3: its body's end is ambiguous, the way requests are smuggled past a
// proxy that reads the other framing), so that neither it nor a request
// sent after it on the same connection is served.
func TestTwoFramingsRefused(t *testing.T) {
	var served atomic.Int32
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		io.Copy(io.Discard, r.Body)
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

	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	second := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	for _, te := range []string{"chunked", "Chunked", "gzip, chunked"} {
		for _, order := range []string{"cl-te", "te-cl"} {
			served.Store(0)
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			cl, tr := "Content-Length: 3\r\n", "Transfer-Encoding: "+te+"\r\n"
			framing := cl + tr
			if order == "te-cl" {
				framing = tr + cl
			}
			first := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + framing + "\r\n" +
				fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
			if _, err := io.WriteString(c, first+second); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%s %s: %v", te, order, err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s %s: %d %s, want 400", te, order, resp.StatusCode, got)
			}
			if strings.EqualFold(te, "chunked") && !strings.Contains(string(got), "Content-Length") { // fasthttp refuses other codings itself
				t.Errorf("%s %s: the answer %s does not say what was wrong", te, order, got)
			}
			if next, err := http.ReadResponse(br, nil); err == nil {
				t.Errorf("%s %s: the request after it on the same connection was answered %d", te, order, next.StatusCode)
				next.Body.Close()
			}
			if n := served.Load(); n != 0 {
				t.Errorf("%s %s: the handler served %d requests", te, order, n)
			}
			c.Close()
		}
	}

	// Chunked alone, or Content-Length alone, is served, and the
	// connection kept for the next request.
	served.Store(0)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	chunked := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Note: Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	io.WriteString(c, chunked+second)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for i := range 2 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d of a connection with one framing each: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("request %d of a connection with one framing each: %d", i, resp.StatusCode)
		}
	}
	if n := served.Load(); n != 2 {
		t.Errorf("served %d of the two requests with one framing each", n)
	}
}

// FuzzSentContentLength: raw headers hold a Content-Length field exactly
// when a line's name, trimmed, is Content-Length in any case; adding such
// a line anywhere makes it so.
func FuzzSentContentLength(f *testing.F) {
	f.Add([]byte("Host: a\r\nTransfer-Encoding: chunked\r\n"))
	f.Add([]byte("content-length: 3\r\n"))
	f.Add([]byte("X-Note: Content-Length: 3\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := false
		for _, line := range strings.Split(string(raw), "\n") {
			if k, _, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
				want = true
			}
		}
		if got := sentContentLength(raw); got != want {
			t.Errorf("sentContentLength(%q) = %v, want %v", raw, got, want)
		}
		if !sentContentLength(append(append([]byte(nil), raw...), "\r\nContent-Length: 1\r\n"...)) {
			t.Errorf("a Content-Length line after %q is not seen", raw)
		}
	})
}
