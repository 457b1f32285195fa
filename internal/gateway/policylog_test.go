package gateway

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/atomicfile"
	"github.com/agentreach/reach/internal/config"
)

// TestPolicyReloadLoggedOnce: a policy file saved with a typo while the
// gateway serves is one error in the log, not the same error twice (the
// watcher's and the gateway's, at two levels).
func TestPolicyReloadLoggedOnce(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "p.cedar")
	os.WriteFile(pol, []byte(`permit (principal, action == Reach::Action::"call", resource);`+"\n"), 0o600)
	cfgPath := filepath.Join(dir, "reach.yaml")
	os.WriteFile(cfgPath, []byte("examples: true\npolicy: {path: ./p.cedar}\n"), 0o600)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	g, err := New(context.Background(), cfg, &Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	// Two typos, one after the other (the second a line further down): once
	// the second is logged, every line about the first has been written.
	// Each is written whole (a temporary file renamed over the policy), so
	// the watcher never reads half of one; its mark is the file's name with
	// the line and column, which no log time (T12:1x, x2:1x) can spell.
	save := func(text string) {
		t.Helper()
		if err := atomicfile.Write(pol, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(mark string) {
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), mark); {
			if time.Now().After(deadline) {
				t.Fatalf("no %q logged after a policy with a typo:\n%s", mark, logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	save("permit (principal\n")
	wait("p.cedar:2:1")
	save("\n\npermit (principal\n")
	wait("p.cedar:4:1")
	n := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "p.cedar:2:1") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the typo is logged %d times, want once:\n%s", n, logs.String())
	}
}
