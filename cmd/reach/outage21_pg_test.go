package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// TestOutage21UnreadableKeptLines: the kept completions' file a stop left
// has lines that cannot be read, one in the middle and one cut short at
// the end. The next start writes the readable ones, moves the others
// aside (a file next to it, 0600) and removes the file, so its journal
// runs: a write call that then ends while PostgreSQL is down, its
// instance killed (kill -9) before the store is back, is answered its
// result on retry after the next start, and ran once. Before, the file
// stayed with its unreadable lines, the start kept no journal, and the
// kill lost the completion: the retry was answered "interrupted".
func TestOutage21UnreadableKeptLines(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, g := newGateFleet(t, "2s")
	f.stop(0)
	path := filepath.Join(f.data[0], "idempotency-kept-a.jsonl") // instance a's
	middle, end := `{"owner":"reach/x","key":"k-9",result}`, `{"owner":"reach/x","key":"k-8","res`
	left := `{"owner":"reach/x","key":"k-7","args":"a","result":{"status":"success"},"expires":"2099-01-01T00:00:00Z"}`
	if err := os.WriteFile(path, []byte(left+"\n"+middle+"\n"+left+"\n"+end), 0o600); err != nil {
		t.Fatal(err)
	}
	f.start(0)
	servesAgain(t, f, 0)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the kept file after a start that read it: %v; want it removed, its unreadable lines moved aside", err)
	}
	aside := store.KeptAside(path)
	fi, err := os.Stat(aside)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the file of the unreadable lines: %v %v; want it, 0600", fi, err)
	}
	if b, _ := os.ReadFile(aside); string(b) != middle+"\n"+end+"\n" {
		t.Fatalf("the file of the unreadable lines holds %q; want both lines", b)
	}
	endsInOutage(t, f, g, gateKeyed(t, f, g, 0, "r-kill", "kill"), "kill")
	// The client is answered before the store refuses the completion:
	// killed once the journal has it.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), `gate__gate:k-kill`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kept file during the outage: %q %v; want the call's completion in it (the journal)", b, err)
		}
	}
	f.kill(0)
	f.stop(1)
	if err := f.pg.Resume(); err != nil {
		t.Fatal(err)
	}
	startsAndReplays(t, f, g, path, "kill")
}
