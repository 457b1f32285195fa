package upstream

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

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
