package cluster

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// While a stop the store refused is appended to the stops file and synced
// (held here until the test lets it go), the cluster's lock is free, so
// the paths of the running requests go on; and a kept stop stored
// meanwhile does not remove the file under the stop being filed: the file
// keeps it. Before, keepStop filed the stop holding c.mu, and TryLock
// failed.
func TestFilingAStopLeavesTheClusterLockFree(t *testing.T) {
	stops := filepath.Join(t.TempDir(), "stops-kept.jsonl")
	c := &Cluster{unstored: map[string]*unstoredStop{}, stopsFile: stops, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	rt := reach.New(&reach.Options{DisableLoopGuard: true})
	begin := func(id string) *reach.Request {
		_, q, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	first, second := begin("r-first"), begin("r-second")
	cause := reach.Cause{Mode: reach.Cancel, Reason: "stopped by its operator"}
	c.keepStop(nil, first, cause)

	entered, release := make(chan struct{}), make(chan struct{})
	real := appendStop
	appendStop = func(path string, b []byte) error {
		close(entered)
		<-release
		return real(path, b)
	}
	t.Cleanup(func() { appendStop = real })
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		c.keepStop(nil, second, cause)
	}()
	<-entered
	if !c.mu.TryLock() {
		close(release)
		<-kept
		t.Fatal("the cluster's lock is held while a stop is written to the stops file")
	}
	c.mu.Unlock()
	unfiled := make(chan struct{})
	go func() {
		defer close(unfiled)
		c.storedStop(first.ID(), cause.Mode) // the last kept stop but the one being filed
	}()
	close(release)
	<-kept
	<-unfiled
	b, err := os.ReadFile(stops)
	if err != nil {
		t.Fatalf("the stops file went while a stop was filed: %v", err)
	}
	if !strings.Contains(string(b), `"r-second"`) {
		t.Fatalf("the stops file lost the stop being filed: %s", b)
	}
	c.storedStop(second.ID(), cause.Mode)
	if _, err := os.Stat(stops); !os.IsNotExist(err) {
		t.Fatalf("the stops file stays once every stop in it is stored: %v", err)
	}
}
