package upstream

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
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

// A coalesced job asked for without pause runs again no sooner than
// coalescePace after it last began: an upstream that announced its list
// changed without pause was listed again back to back for as long as it
// went on, every client told each time.
func TestToolListChangedPaced(t *testing.T) {
	defer func(d time.Duration) { coalescePace = d }(coalescePace)
	coalescePace = 50 * time.Millisecond
	p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: serveEcho(t).URL}}})
	u := p.ups[0]
	var mu sync.Mutex
	var starts []time.Time
	var j coalesced
	job := func() {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
	}
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		u.coalesce(&j, job)
		time.Sleep(100 * time.Microsecond)
	}
	waitUntil(t, "the last run", func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		return !j.running
	})
	mu.Lock()
	defer mu.Unlock()
	if len(starts) < 2 {
		t.Fatalf("asked for without pause for 300 ms: ran %d times", len(starts))
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < coalescePace {
			t.Fatalf("run %d began %v after the one before, within the pace %v (%d runs)", i, gap, coalescePace, len(starts))
		}
	}
}
