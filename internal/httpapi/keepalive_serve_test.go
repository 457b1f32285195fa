//go:build unix

package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/policy/approval"
)

// echoServer serves an MCP handler that answers each request with its
// body, as reach serve serves it (fasthttp, ReduceMemoryUsage).
func echoServer(t *testing.T) string {
	t.Helper()
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
	opts := &Options{Runtime: reach.New(nil), Tools: noTools{}, Approvals: approval.New(nil), MCP: mcp,
		Model: http.NotFoundHandler(), A2A: http.NotFoundHandler(), Metrics: http.NotFoundHandler(), MaxBody: 1 << 20}
	s := NewServer(opts, context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

func echoRequest(body string) string {
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// readEcho reads one answer and checks it is body.
func readEcho(br *bufio.Reader, body string) error {
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 || string(got) != body {
		return fmt.Errorf("answer %d %.80q..., want the body %.80q...", resp.StatusCode, got, body)
	}
	return nil
}

// Requests sent as the first read of a keep-alive connection can find
// them: pipelined in one write, a body past the first read's buffer, a
// request written a few bytes at a time, each answered with its own
// bytes, on many connections at once (no connection reads another's).
func TestFirstByteServesWhatArrives(t *testing.T) {
	addr := echoServer(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for c := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(conn)
			body := func(i, n int) string {
				s := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"c":%d,"pad":"`, i, c)
				return s + strings.Repeat(string(rune('a'+c%26)), max(0, n-len(s)-3)) + `"}}`
			}
			for round := range 4 {
				// three pipelined, one past the buffer's 4 KiB
				bodies := []string{body(round*10+1, 100), body(round*10+2, 6000), body(round*10+3, 50)}
				var all strings.Builder
				for _, b := range bodies {
					all.WriteString(echoRequest(b))
				}
				if _, err := io.WriteString(conn, all.String()); err != nil {
					errs <- err
					return
				}
				for _, b := range bodies {
					if err := readEcho(br, b); err != nil {
						errs <- fmt.Errorf("conn %d round %d pipelined: %w", c, round, err)
						return
					}
				}
				// a few bytes at a time
				b := body(round*10+4, 300)
				req := echoRequest(b)
				for i := 0; i < len(req); i += 7 {
					if _, err := io.WriteString(conn, req[i:min(len(req), i+7)]); err != nil {
						errs <- err
						return
					}
					time.Sleep(time.Millisecond)
				}
				if err := readEcho(br, b); err != nil {
					errs <- fmt.Errorf("conn %d round %d dribbled: %w", c, round, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A client that sends its request and half-closes its connection gets
// its answer.
func TestFirstByteHalfClosed(t *testing.T) {
	addr := echoServer(t)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	// a first request, so that the next is read by the one-byte wait
	if _, err := io.WriteString(conn, echoRequest(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := readEcho(br, `{"a":1}`); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, echoRequest(`{"b":2}`)); err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).CloseWrite()
	if err := readEcho(br, `{"b":2}`); err != nil {
		t.Fatal(err)
	}
}
