package upstream

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/redact"
	"golang.org/x/time/rate"
)

// countHandler counts the lines logged, and those said to be skipped.
type countHandler struct{ lines, skipped atomic.Int64 }

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "skipped") {
		h.lines.Add(1)
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "skipped" {
			h.skipped.Add(a.Value.Int64())
		}
		return true
	})
	return nil
}
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }

// An upstream's stderr written as fast as it can be is logged to a bound
// (stderrBurst lines at once, stderrRate a second after), the lines past
// it counted and the count logged with the next line let through: every
// line of it was logged, and an upstream filled reach's log at the pipe's
// speed. 100,000 lines at once log about stderrBurst (the rate adds a few
// while they are written), and every line is logged or counted.
func TestStdioStderrBounded(t *testing.T) {
	h := &countHandler{}
	l := &lineLogger{log: slog.New(h)}
	line := []byte(strings.Repeat("e", 100) + "\n")
	for range 100000 {
		l.Write(line)
	}
	if n := h.lines.Load(); n < stderrBurst || n > 10*stderrBurst {
		t.Fatalf("100000 lines of stderr at once: %d logged; want about %d", n, stderrBurst)
	}
	l.limit.SetLimit(rate.Inf) // a line later: the count of those skipped comes first
	l.Write(line)
	if logged, skipped := h.lines.Load(), h.skipped.Load(); logged+skipped != 100001 {
		t.Fatalf("100001 lines: %d logged, %d said skipped", logged, skipped)
	}
}

// A stdio upstream that exits at start said only `calling "initialize":
// EOF`: its status now says its exit status and the last lines of its
// stderr (its secrets masked), and what to do.
func TestStdioExitAtStartSaysWhy(t *testing.T) {
	red, err := redact.New(&redact.Options{Secrets: []string{"sk-SECRET1234"}})
	if err != nil {
		t.Fatal(err)
	}
	script := `for i in 1 2 3 4 5 6 7 8; do echo "noise $i" >&2; done; echo "fatal: the key sk-SECRET1234 is refused" >&2; printf "no newline at the end" >&2; exit 3`
	p := newPoolMasking(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", Command: []string{"sh", "-c", script}}}}, red)
	st := p.Statuses()[0]
	t.Log(st.Error)
	for _, want := range []string{"exit status 3", "fatal: the key", "no newline at the end", "run the upstream's command by hand"} {
		if !strings.Contains(st.Error, want) {
			t.Errorf("status error %q; want it to say %q", st.Error, want)
		}
	}
	if strings.Contains(st.Error, "SECRET") || strings.Contains(st.Error, "noise 1") {
		t.Errorf("status error %q: a secret, or more than the last lines of stderr", st.Error)
	}
}

// The last lines of stderr are masked before they are quoted: quoted
// first, a secret with a character outside the Basic Multilingual Plane
// was spelled with Go's \U escape, which the masking does not read, and
// reached the status (/healthz, the banner, the logs) whole.
func TestStdioExitAtStartMasksBeforeQuoting(t *testing.T) {
	const secret = "sk-\U0001F511-SECRET1234"
	red, err := redact.New(&redact.Options{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	script := `echo "fatal: the key ` + secret + ` is refused" >&2; exit 3`
	p := newPoolMasking(t, &config.Config{Upstreams: []config.Upstream{{Name: "up", Command: []string{"sh", "-c", script}}}}, red)
	st := p.Statuses()[0]
	if !strings.Contains(st.Error, "fatal: the key") || !strings.Contains(st.Error, "exit status 3") {
		t.Fatalf("status error %q; want the exit and the line of stderr", st.Error)
	}
	if strings.Contains(st.Error, "SECRET") {
		t.Errorf("status error %q: the secret, quoted", st.Error)
	}
}
