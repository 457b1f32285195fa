package a2a

import (
	"sync"
	"testing"
)

// TestBackgroundBegunWhileClosing: a goroutine begun in the background
// while Close waits (a stop settling as the gateway's close ends a
// hand-off's request) is counted with no race, from a count of zero or
// not, and Wait returns only once the goroutines it counts are over. On a
// sync.WaitGroup, an Add from zero concurrent with Wait is a misuse the
// race detector reports (the project's CI failed on it, in
// TestA2AClientRootEndsWithItsStoppedHandoff).
func TestBackgroundBegunWhileClosing(t *testing.T) {
	var b bgGroup
	for range 200 {
		var wg sync.WaitGroup
		wg.Go(func() { b.Wait() })
		wg.Go(func() { b.Go(func() {}) })
		wg.Wait()
	}
	b.Wait()
	// Begun by a goroutine counted while Wait waits: waited for too.
	release, inner := make(chan struct{}), make(chan struct{})
	var innerDone bool
	b.Go(func() {
		b.Go(func() { <-inner; innerDone = true })
		<-release
	})
	waited := make(chan struct{})
	go func() { b.Wait(); close(waited) }()
	close(release)
	select {
	case <-waited:
		t.Fatal("Wait returned while a goroutine it counts still ran")
	default:
	}
	close(inner)
	<-waited
	if !innerDone {
		t.Fatal("Wait returned before the goroutine begun while it waited ended")
	}
}
