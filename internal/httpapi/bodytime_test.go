package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/policy/approval"
)

// TestSlowBodyAnswered408: a client that sends a request's headers and then
// trickles its body held the connection and what was read of it: 5 minutes
// on fasthttp's lane, with no bound at all for a request net/http serves (a
// connection handed over after its first request: an API call, a stream).
// A body now has a grace period and then a minimum rate; past it the
// request is answered 408 with a JSON error that says what to do, and its
// connection closed. A GET without a body (a long stream) is not bound.
func TestSlowBodyAnswered408(t *testing.T) {
	defer func(g time.Duration) { bodyGrace = g }(bodyGrace)
	bodyGrace = 200 * time.Millisecond
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			http.NewResponseController(w).Flush()
			select { // a stream that outlives the body's bound
			case <-r.Context().Done():
			case <-time.After(3 * bodyGrace):
				io.WriteString(w, "event: message\ndata: {}\n\n")
			}
			return
		}
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
	slow := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:10])
	for _, lane := range []string{"fasthttp", "net/http"} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(c)
		if lane == "net/http" {
			// A GET stream hands the connection over to net/http; it
			// outlives the body's bound and is served whole.
			io.WriteString(c, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("the stream: %v", err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), "event: message") {
				t.Fatalf("the stream: %d %q, want 200 and its event", resp.StatusCode, got)
			}
		}
		io.WriteString(c, slow)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("%s: a trickled body was not answered: %v", lane, err)
			c.Close()
			continue
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(got), "body_timeout") || !strings.Contains(string(got), "at once") {
			t.Errorf("%s: a trickled body: %d %s, want 408 body_timeout saying what to do", lane, resp.StatusCode, got)
		}
		if !resp.Close {
			t.Errorf("%s: the connection of a trickled body stays open", lane)
		}
		c.Close()
	}
}

// TestUnauthenticatedBodyReadNoFurther: on net/http's lane too, a request
// whose headers do not authenticate it has no more than preAuthBody of
// its body read before its 401: a client without credentials that
// declared a large body and sent part of it is answered at once, not
// held (and what it sent kept) until the rest came or the body's time ran
// out.
func TestUnauthenticatedBodyReadNoFurther(t *testing.T) {
	defer func(g time.Duration, r int64) { bodyGrace, minBodyRate = g, r }(bodyGrace, minBodyRate)
	minBodyRate = 1 << 30 // a body's time: bodyGrace, set for each case
	keys, err := auth.OpenKeys(filepath.Join(t.TempDir(), auth.KeysFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := keys.Create(auth.KeySpec{Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	opts := &Options{Runtime: reach.New(nil), Tools: noTools{}, Approvals: approval.New(nil), MCP: http.NotFoundHandler(),
		Model: http.NotFoundHandler(), A2A: http.NotFoundHandler(), Metrics: http.NotFoundHandler(), MaxBody: 4 << 20,
		Authn: auth.New(&auth.Options{Keys: keys, Open: []string{"/healthz", "/livez", "/readyz"}})}
	s := NewServer(opts, context.Background())
	srv := httptest.NewServer(s.std.Handler) // net/http's lane, as a connection handed over is served
	defer srv.Close()
	// Declared 4 MiB: more left than net/http reads after a handler, which
	// it does not wait for (the body's time, a minute here, is past the
	// failure's bound); 200 KiB: less, which it reads before it answers,
	// within the body's time (half a second here).
	for _, tc := range []struct {
		declared int
		grace    time.Duration
	}{{4 << 20, time.Minute}, {200 << 10, 500 * time.Millisecond}} {
		declared := tc.declared
		bodyGrace = tc.grace
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(8 * time.Second)) // the failure's bound
		fmt.Fprintf(c, "POST /v1/calls HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", declared)
		if _, err := c.Write(make([]byte, preAuthBody+1)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Errorf("a request without credentials that sent %d bytes of its %d-byte body was not answered: %v", preAuthBody+1, declared, err)
			c.Close()
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a request without credentials, %d bytes declared: %d, want 401", declared, resp.StatusCode)
		}
		c.Close()
	}
}
