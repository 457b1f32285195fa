package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"
)

// TestStreamEndsWhateverItsAccept: a stream's credentials were checked
// again only for a GET whose first Accept header held "text/event-stream"
// as written. The HTTP+SSE transport's GET /sse checks no Accept at all,
// and an MCP session's GET /mcp takes "*/*", "text/*", any case and a
// second Accept header: a stream opened so with a key went on after the
// key was revoked. Every GET is now watched.
func TestStreamEndsWhateverItsAccept(t *testing.T) {
	old := StreamRecheck
	StreamRecheck = time.Millisecond
	t.Cleanup(func() { StreamRecheck = old })
	for _, accept := range [][]string{nil, {"*/*"}, {"text/*"}, {"TEXT/EVENT-STREAM"}, {"application/json", "text/event-stream"}} {
		t.Run(fmt.Sprint(accept), func(t *testing.T) {
			keys, err := OpenKeys(filepath.Join(t.TempDir(), KeysFile))
			if err != nil {
				t.Fatal(err)
			}
			secret, key, err := keys.Create(KeySpec{Principal: "alice", Tenant: "acme"})
			if err != nil {
				t.Fatal(err)
			}
			opened, ended := make(chan struct{}), make(chan error, 1)
			stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(opened)
				select {
				case <-r.Context().Done():
					ended <- context.Cause(r.Context())
				case <-time.After(time.Minute):
					ended <- errors.New("still open a minute after its key was revoked")
				}
			})
			h := New(&Options{Keys: keys}).Middleware(stream)
			r := httptest.NewRequest("GET", "/sse", nil)
			r.Header.Set("X-Reach-Key", secret)
			for _, a := range accept {
				r.Header.Add("Accept", a)
			}
			go h.ServeHTTP(httptest.NewRecorder(), r)
			<-opened
			if err := keys.Revoke(key.ID); err != nil {
				t.Fatal(err)
			}
			if err := <-ended; !errors.Is(err, ErrCredentialsEnded) {
				t.Errorf("the stream of a revoked key (Accept %q) ended by %v, want ErrCredentialsEnded", accept, err)
			}
		})
	}
}
