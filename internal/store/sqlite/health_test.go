package sqlite

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// Unready is "" on a store that writes, says the last write's failure
// while it failed for the store's own reason (not one write's), clears at
// the next commit, and names the database file once it is removed.
func TestUnready(t *testing.T) {
	old := ProbeEvery
	ProbeEvery = 10 * time.Millisecond
	defer func() { ProbeEvery = old }()
	dir := t.TempDir()
	s, err := Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if why := s.Unready(); why != "" {
		t.Fatalf("Unready on a new store: %q", why)
	}
	s.wrote1(errors.New("UNIQUE constraint failed: requests.id"))
	if why := s.Unready(); why != "" {
		t.Fatalf("Unready after one write's own error: %q; want ready", why)
	}
	s.wrote1(errors.New("database or disk is full"))
	if why := s.Unready(); !strings.Contains(why, "disk is full") || !strings.Contains(why, "free space") {
		t.Fatalf("Unready after a full disk: %q", why)
	}
	// The probe commits (the disk is not full here): ready again.
	for deadline := time.Now().Add(time.Minute); s.Unready() != ""; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Unready a minute after the store took writes again: %q", s.Unready())
		}
	}
	if err := os.Remove(s.Path()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(s.Unready(), "removed or replaced"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Unready a minute after the database file was removed: %q", s.Unready())
		}
	}
	// /readyz answers it without credentials: no path of the machine.
	if why := s.Unready(); strings.Contains(why, dir) {
		t.Fatalf("Unready names the data folder's path %s: %q", dir, why)
	}
}
