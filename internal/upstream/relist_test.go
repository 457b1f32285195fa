package upstream

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream that announces its tool list changed many times (a flood of
// notifications/tools/list_changed) is listed again once at a time, and at
// most once more after the listing in flight: each announcement began a
// tools/list of its own, all at once (a goroutine and a connection each),
// and a list older than the last could be put in force after it.
func TestToolListChangedFloodCoalesced(t *testing.T) {
	var lists atomic.Int32
	gate := make(chan struct{})
	var blocking atomic.Bool
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			if bytes.Contains(b, []byte(`"tools/list"`)) && blocking.Load() {
				lists.Add(1)
				<-gate
			}
		}
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	life, cancel := context.WithCancel(context.Background())
	h := &host{}
	p, err := Connect(t.Context(), life, &Options{Config: &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL}}},
		Runner: h, Catalog: h, Levels: h, Models: reach.New(nil)})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	p.Serve(t.Context(), mcp.NewServer(&mcp.Implementation{Name: "gateway"}, nil))
	t.Cleanup(func() { cancel(); p.Close() })
	blocking.Store(true)
	u := p.ups[0]
	const n = 100
	for range n {
		u.toolsChanged()
	}
	for lists.Load() == 0 { // the first listing reached the upstream
		time.Sleep(time.Millisecond)
	}
	close(gate)
	h.close() // every listing begun has ended
	if got := lists.Load(); got > 2 {
		t.Errorf("%d announcements made %d tools/list calls, want at most 2 (the one in flight, and one after it)", n, got)
	}
}
