package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
	// Each run's beginning as the pace reads it (began, stamped as the
	// run begins): the job's own clock, read after it, lags it by however
	// long the run's goroutine waited for a core, which under -race on a
	// loaded machine made two runs look closer than they began.
	job := func() {
		u.mu.Lock()
		began := j.began
		u.mu.Unlock()
		mu.Lock()
		starts = append(starts, began)
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

// An upstream whose tools could not be listed, once a redial connects it
// again, showed as connected with 0 tools and no error, and was never
// listed again: a user saw nothing wrong, and the model got unknown-tool
// refusals. Its status now says the listing failed, and the listing is
// tried again until it goes through.
func TestFailedListingShownAndRetried(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	s := echoServer()
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && failing.Load() {
				return nil, errors.New("the tool registry is warming up")
			}
			return next(ctx, method, req)
		}
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL}}})
	waitUntil(t, "the redial", func() bool { return p.Statuses()[0].Connected })
	waitUntil(t, "the listing's failure in the status", func() bool {
		st := p.Statuses()[0]
		return st.Connected && strings.Contains(st.Error, "listing its tools failed") && strings.Contains(st.Error, "warming up")
	})
	failing.Store(false)
	waitUntil(t, "the listing tried again", func() bool {
		st := p.Statuses()[0]
		return st.Connected && st.Tools > 0 && st.Error == ""
	})
}

// A listing that fails while a retry of a failed one is pending (a
// list_changed, a redial) schedules no retry of its own: each did, and
// each failing retry another, so that the retries multiplied for as long
// as the listing failed, and went on after it went through. Eight
// announcements while it fails, then a listing through: no retry left.
func TestFailedListingOneRetryPending(t *testing.T) {
	defer func(f, m, c time.Duration) { listRetryFirst, listRetryMax, coalescePace = f, m, c }(listRetryFirst, listRetryMax, coalescePace)
	listRetryFirst, listRetryMax, coalescePace = 10*time.Millisecond, 40*time.Millisecond, time.Millisecond
	var failing atomic.Bool
	failing.Store(true)
	var lists atomic.Int32
	s := echoServer()
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				lists.Add(1)
				if failing.Load() {
					return nil, errors.New("the tool registry is warming up")
				}
			}
			return next(ctx, method, req)
		}
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", URL: srv.URL}}})
	waitUntil(t, "the listing's failure in the status", func() bool {
		st := p.Statuses()[0]
		return st.Connected && strings.Contains(st.Error, "listing its tools failed")
	})
	u := p.ups[0]
	for range 8 {
		n := lists.Load()
		u.toolsChanged()
		waitUntil(t, "the announced listing", func() bool { return lists.Load() > n })
	}
	failing.Store(false)
	waitUntil(t, "a listing through", func() bool {
		st := p.Statuses()[0]
		return st.Connected && st.Tools > 0 && st.Error == ""
	})
	after := lists.Load()
	// Not a bound on speed: every retry pending at the listing that went
	// through is due by then, and with one pending at most (stopped by
	// that listing) none is left, however late it comes.
	time.Sleep(5 * listRetryMax)
	if got := lists.Load() - after; got > 1 {
		t.Errorf("after the listing went through, %d more tools/list calls: retries of the failed listings left pending", got)
	}
	u.mu.Lock()
	pending := u.listRetry != nil
	u.mu.Unlock()
	if pending {
		t.Error("a retry of a failed listing still pending after a listing went through")
	}
}
