package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/policy/approval"
)

// blockingFast is an MCP fast lane whose tools/call answers wait for
// release: calls in flight.
type blockingFast struct{ entered, release chan struct{} }

func (b blockingFast) AnswerMessage(ctx context.Context, _ link.Headers, _ []byte, _ mcpwire.Message, out *bytes.Buffer) (string, bool) {
	b.entered <- struct{}{}
	<-b.release
	out.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	return "application/json", true
}

// TestRequestsInFlightBoundedPerPrincipal: one authenticated principal
// could open connections (streams, calls) until the gateway refused
// everyone. Past requests_per_principal in flight, its next request is
// refused 429 with a JSON-RPC error (on /mcp) saying the bound and what to
// do, on every lane (a stream handed to net/http, a call on the fast lane);
// another principal goes on; once one of its requests ends, it may send
// another.
func TestRequestsInFlightBoundedPerPrincipal(t *testing.T) {
	keys, err := auth.OpenKeys(filepath.Join(t.TempDir(), auth.KeysFile))
	if err != nil {
		t.Fatal(err)
	}
	alice, _, err := keys.Create(auth.KeySpec{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := keys.Create(auth.KeySpec{Principal: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	streamEnd := make(chan struct{})
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet { // a stream, until streamEnd
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
			case <-streamEnd:
			}
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	fast := blockingFast{entered: make(chan struct{}, 4), release: make(chan struct{})}
	opts := &Options{Runtime: reach.New(nil), Tools: noTools{}, Approvals: approval.New(nil), MCP: mcp,
		Model: http.NotFoundHandler(), A2A: http.NotFoundHandler(), Metrics: http.NotFoundHandler(), MaxBody: 1 << 20,
		Authn:       auth.New(&auth.Options{Keys: keys, Open: []string{"/healthz", "/livez", "/readyz"}}),
		MaxInFlight: 2, Fast: fast}
	s := NewServer(opts, context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Close()
	defer close(fast.release)

	// send writes a raw request on a new connection and returns its reader.
	send := func(key, req string) (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(20 * time.Second))
		io.WriteString(c, strings.Replace(req, "KEY", key, 1))
		return c, bufio.NewReader(c)
	}
	const stream = "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Reach-Key: KEY\r\nAccept: text/event-stream\r\n\r\n"
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}}}`
	callReq := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Reach-Key: KEY\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(call), call)
	status := func(br *bufio.Reader) (*http.Response, []byte) {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return resp, b
		}
		return resp, nil
	}
	// Alice: a stream (net/http's lane), and a call held on the fast lane.
	_, br := send(alice, stream)
	if resp, _ := status(br); resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's first stream: %d", resp.StatusCode)
	}
	_, callBr := send(alice, callReq)
	select { // the call is on the fast lane, in flight
	case <-fast.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("alice's call never reached the fast lane")
	}
	// Past the bound: a stream and a call are refused, with what to do.
	for _, req := range []string{stream, callReq} {
		_, br := send(alice, req)
		resp, b := status(br)
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("alice's third request in flight: %d, want 429", resp.StatusCode)
		}
		var e struct {
			JSONRPC string `json:"jsonrpc"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil || e.JSONRPC != "2.0" || e.Error.Code == 0 {
			t.Fatalf("the refusal %q is not a JSON-RPC error (%v)", b, err)
		}
		if !strings.Contains(e.Error.Message, "requests_per_principal") || !strings.Contains(e.Error.Message, "2 at once") {
			t.Errorf("the refusal says %q, want the bound and its key", e.Error.Message)
		}
	}
	// Bob is not refused for alice's requests.
	_, bobBr := send(bob, stream)
	if resp, _ := status(bobBr); resp.StatusCode != http.StatusOK {
		t.Errorf("bob's stream: %d, want 200", resp.StatusCode)
	}
	// Alice's call ends: she may send another.
	fast.release <- struct{}{}
	if resp, _ := status(callBr); resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's call: %d", resp.StatusCode)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, br := send(alice, stream)
		resp, _ := status(br)
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's stream after her call ended: %d, want 200", resp.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(streamEnd)
}
