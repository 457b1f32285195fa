package upstream

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHeldReadWhileApproved: a read asks whether its URI is held
// (resourceHeld, which ranges over the held templates after letting go of
// the lock) while RecheckPins serves again the ones approved meanwhile.
// RecheckPins used to delete from the map the reader ranged over: under
// -race a data race, without it a process that can die of a concurrent
// map iteration and write. Each approval now replaces the map.
func TestHeldReadWhileApproved(t *testing.T) {
	p := &Pool{server: mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)}
	u := &upstream{p: p, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	p.ups = []*upstream{u}
	held := map[string]any{}
	templates := map[string]*mcp.ResourceTemplate{}
	for i := range 200 {
		tm := &mcp.ResourceTemplate{Name: fmt.Sprint("t", i), URITemplate: fmt.Sprintf("file:///t%d/{x}", i)}
		templates[tm.URITemplate] = tm
		held[PinKey("resource_template", tm.URITemplate)] = tm
	}
	u.mirrored = mirrored{templates: templates, held: held}
	p.pinner = func(_ string, defs map[string]any, _ bool) map[string]bool { // every other one approved
		held, i := map[string]bool{}, 0
		for key := range defs {
			if i++; i%2 == 0 {
				held[key] = true
			}
		}
		return held
	}
	var wg sync.WaitGroup
	wg.Add(1)
	done, reading := make(chan struct{}), make(chan struct{})
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			if i == 1 {
				close(reading)
			}
			select {
			case <-done:
				return
			default:
			}
			if err := u.resourceHeld("file:///elsewhere/x"); err != nil {
				t.Errorf("a URI no held template matches is held: %v", err)
				return
			}
		}
	}()
	<-reading
	p.RecheckPins()
	close(done)
	wg.Wait()
	p.mirrorMu.Lock()
	left := len(u.mirrored.held)
	p.mirrorMu.Unlock()
	if left != 100 {
		t.Errorf("%d held after half were approved, want 100", left)
	}
}
