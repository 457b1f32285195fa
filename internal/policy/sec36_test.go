package policy

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestSec36EmptyPoliciesSaySo: policy files emptied (a truncating save
// cut short, `> policy.cedar`, a full disk) are still put in force — they
// parse, and with no permit everything is denied, failing closed — but the
// reload says so at warning level, with the path and what to do; as does a
// start on empty files. A broken file keeps the previous policies (as
// TestWatcherReload shows). Before, the only line was "policies reloaded
// policies=0" at info level: every call turned down with no warning.
func TestSec36EmptyPoliciesSaySo(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "main.cedar")
	write(t, file, permitReads, 1)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	eng := New(&Options{Policies: mustParse(t)})
	w, err := NewWatcher(eng, file, &WatchOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("a start on policies warned: %s", logs.String())
	}
	write(t, file, brokenPolicy, 2)
	if w.Check() == nil || decision(eng) != reach.Permit {
		t.Fatalf("a broken file: decision %v, want the previous policies in force", decision(eng))
	}
	write(t, file, "", 3)
	if err := w.Check(); err != nil {
		t.Fatal(err)
	}
	if decision(eng) != reach.Deny {
		t.Errorf("an emptied file: decision %v, want deny (no permit)", decision(eng))
	}
	out := logs.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "hold no policy") || !strings.Contains(out, file) {
		t.Errorf("an emptied file was put in force without a warning naming it:\n%s", out)
	}
	logs.Reset()
	if _, err := NewWatcher(New(&Options{Policies: mustParse(t)}), file, &WatchOptions{Logger: log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "hold no policy") {
		t.Errorf("a start on an empty file did not warn:\n%s", logs.String())
	}
}
