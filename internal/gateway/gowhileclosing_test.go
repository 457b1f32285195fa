package gateway

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestGoWhileClosing: work begun with Go while Close runs (an upstream's
// redial or re-listing, begun by a session lost as the close disconnects
// the upstreams) either runs and is over when Close returns, or is refused
// (false) and never runs; counting it never races with Close's wait. A
// sync.WaitGroup whose Add came from a count of zero while Close waited
// is a misuse the race detector reports (the A2A gateway's close failed
// the project's CI on it), and one whose Add came after the wait returned
// began work nothing waited for.
func TestGoWhileClosing(t *testing.T) {
	for range 20 {
		g, err := New(t.Context(), &config.Config{}, &Options{Offline: true, Ephemeral: true})
		if err != nil {
			t.Fatal(err)
		}
		var began, ended, refused, late atomic.Int64
		var closed atomic.Bool
		var callers sync.WaitGroup
		start := make(chan struct{})
		for range 8 {
			callers.Go(func() {
				<-start
				for range 50 {
					if !g.Go(func() {
						if closed.Load() {
							late.Add(1)
						}
						began.Add(1)
						ended.Add(1)
					}) {
						refused.Add(1)
					}
				}
			})
		}
		close(start)
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		closed.Store(true)
		endedAtClose := ended.Load()
		callers.Wait()
		// Every Go that reported true before Close returned had ended by
		// then: ran after Close returned, it was counted by nobody.
		if n := late.Load(); n != 0 {
			t.Fatalf("%d goroutines begun with Go ran after Close returned", n)
		}
		if endedAtClose != began.Load() {
			t.Fatalf("Close returned with %d of %d goroutines begun with Go not over", began.Load()-endedAtClose, began.Load())
		}
		if began.Load()+refused.Load() != 8*50 {
			t.Fatalf("%d ran and %d were refused of %d", began.Load(), refused.Load(), 8*50)
		}
		if g.Go(func() {}) {
			t.Fatal("Go reported true after Close: work nothing waits for")
		}
	}
}
