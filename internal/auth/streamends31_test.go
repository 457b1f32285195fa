package auth

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"
)

// TestStreamEndsWhenItsKeyIsRevoked: a stream the middleware let through
// (an MCP session's GET, the HTTP+SSE transport's /sse: a GET that accepts
// text/event-stream) lasts as long as its client keeps the connection.
// Its credentials were checked once, when it opened: a stream opened with
// a key went on after the key was revoked, carrying the session's
// notifications to whoever held it. Its context now ends once its
// credentials no longer authenticate (ErrCredentialsEnded), within
// StreamRecheck; a stream whose key holds, and a plain GET, are not
// touched.
func TestStreamEndsWhenItsKeyIsRevoked(t *testing.T) {
	keys, err := OpenKeys(filepath.Join(t.TempDir(), KeysFile))
	if err != nil {
		t.Fatal(err)
	}
	revoked, key, err := keys.Create(KeySpec{Principal: "alice", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	kept, _, err := keys.Create(KeySpec{Principal: "alice", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 2)
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": open\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		ended <- context.Cause(r.Context())
	})
	srv := httptest.NewServer(New(&Options{Keys: keys}).Middleware(stream))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	open := func(k, header string) *bufio.Reader {
		r, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/mcp", nil)
		r.Header.Set("Accept", "application/json, text/event-stream")
		if header == "X-Reach-Key" {
			r.Header.Set(header, k)
		} else {
			r.Header.Set("Authorization", "Bearer "+k)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the stream: %s", resp.Status)
		}
		b := bufio.NewReader(resp.Body)
		if line, err := b.ReadString('\n'); err != nil || line != ": open\n" {
			t.Fatalf("the stream's first line: %q %v", line, err)
		}
		return b
	}
	gone := open(revoked, "Authorization")
	open(kept, "X-Reach-Key") // left open: its key holds
	if err := keys.Revoke(key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, gone); err != nil {
		if ctx.Err() != nil {
			t.Fatal("the stream of a revoked key went on for a minute")
		}
		t.Fatal(err)
	}
	if err := <-ended; !errors.Is(err, ErrCredentialsEnded) {
		t.Errorf("the revoked key's stream ended by %v, want ErrCredentialsEnded", err)
	}
	select {
	case err := <-ended:
		t.Errorf("the stream of the key kept ended too: %v", err)
	default:
	}
}
