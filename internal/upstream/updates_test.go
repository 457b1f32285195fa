package upstream

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// countingHost is host, counting the goroutines it was asked for.
type countingHost struct {
	host
	gos atomic.Int32
}

func (h *countingHost) Go(f func()) bool {
	h.gos.Add(1)
	return h.host.Go(f)
}

// countingPool returns a pool of no upstream, not served, on a
// countingHost.
func countingPool(t *testing.T) (*countingHost, *Pool) {
	life, cancel := context.WithCancel(context.Background())
	h := &countingHost{}
	p, err := Connect(t.Context(), life, &Options{Config: &config.Config{}, Runner: h, Catalog: h, Levels: h, Models: reach.New(nil)})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); h.close(); p.Close() })
	return h, p
}

// An upstream's flood of notifications/resources/updated costs a goroutine
// for a resource a client subscribed to through it, whatever the number of
// updates that come while one is passed on, and none for another resource:
// each update began one of its own, for any URI.
func TestResourceUpdatedFloodCoalesced(t *testing.T) {
	h, p := countingPool(t)
	// Not served: an update passed on waits for the server, as one being
	// sent to a slow client would.
	u := &upstream{p: p, log: slog.Default()}
	p.subMu.Lock()
	u.subs = map[string]map[*mcp.ServerSession]bool{"file:///watched": {new(mcp.ServerSession): true}}
	p.subMu.Unlock()
	before := h.gos.Load()
	for range 100 {
		u.resourceChanged(&mcp.ResourceUpdatedNotificationParams{URI: "file:///watched"})
		u.resourceChanged(&mcp.ResourceUpdatedNotificationParams{URI: "file:///nobody-asked"})
	}
	if n := h.gos.Load() - before; n != 1 {
		t.Errorf("200 updates took %d goroutines, want 1 (for the subscribed resource)", n)
	}
}

// An upstream's flood of notifications/resources/list_changed (or
// prompts/list_changed) costs one goroutine, mirroring once at a time with
// one more after: each announcement began a goroutine of its own, which
// then found a mirror running and returned.
func TestResourceListChangedFloodCoalesced(t *testing.T) {
	h, p := countingPool(t)
	// Not served: the mirror waits for the gateway to be built, as one
	// under way would for a slow upstream.
	u := &upstream{p: p, log: slog.Default()}
	before := h.gos.Load()
	for range 100 {
		u.remirror()
	}
	if n := h.gos.Load() - before; n != 1 {
		t.Errorf("100 announcements took %d goroutines, want 1", n)
	}
	u.mu.Lock()
	if !u.mirroring.running || !u.mirroring.again {
		t.Errorf("the mirror under way is not to run once more after: %+v", u.mirroring)
	}
	u.mu.Unlock()
}
