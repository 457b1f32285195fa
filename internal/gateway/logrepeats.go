package gateway

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"
)

// repeatQuiet is how long an error must not come again for its run of
// repeats to end (logged once, with their count).
const repeatQuiet = 10 * time.Second

// Repeats collapses the runs of an error logged again and again (the
// store down: every call's read of its history, every queued write): the
// first of a run is logged, with a note that the next are counted; the
// next are counted, not logged, by message (RepeatCounts, the metric
// reach_log_repeats_total); once none has come for the quiet interval the
// run's end is logged, with how many there were and since when. Records
// below ERROR pass as they are. Safe for concurrent use.
type Repeats struct {
	quiet time.Duration
	mu    sync.Mutex
	runs  map[string]*repeatRun // by message
	total map[string]int64      // repeats counted, by message, ever
}

type repeatRun struct {
	first, last time.Time
	n           int64
}

// NewRepeats returns Repeats whose runs end after quiet without their
// error.
func NewRepeats(quiet time.Duration) *Repeats {
	return &Repeats{quiet: quiet, runs: map[string]*repeatRun{}, total: map[string]int64{}}
}

// Handler returns h with the runs of errors collapsed.
func (p *Repeats) Handler(h slog.Handler) slog.Handler { return &repeatHandler{next: h, p: p} }

// Logger returns l with the runs of errors collapsed.
func (p *Repeats) Logger(l *slog.Logger) *slog.Logger { return slog.New(p.Handler(l.Handler())) }

// Counts returns the repeats counted (not logged), by message.
func (p *Repeats) Counts() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.total)
}

type repeatHandler struct {
	next slog.Handler
	p    *Repeats
}

func (h *repeatHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *repeatHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &repeatHandler{next: h.next.WithAttrs(as), p: h.p}
}

func (h *repeatHandler) WithGroup(name string) slog.Handler {
	return &repeatHandler{next: h.next.WithGroup(name), p: h.p}
}

func (h *repeatHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelError {
		return h.next.Handle(ctx, r)
	}
	p := h.p
	now := time.Now()
	p.mu.Lock()
	if run := p.runs[r.Message]; run != nil {
		run.n++
		run.last = now
		p.total[r.Message]++
		p.mu.Unlock()
		return nil
	}
	p.runs[r.Message] = &repeatRun{first: now, last: now}
	p.mu.Unlock()
	msg := r.Message
	time.AfterFunc(p.quiet, func() { h.end(msg) })
	r = r.Clone()
	r.AddAttrs(slog.String("repeats", "the same error again is counted (reach_log_repeats_total), not logged, until it stops for "+p.quiet.String()))
	return h.next.Handle(ctx, r)
}

// end ends the run of msg if it has not come for the quiet interval, and
// logs how many there were if any; else it looks again later.
func (h *repeatHandler) end(msg string) {
	p := h.p
	p.mu.Lock()
	run := p.runs[msg]
	if wait := p.quiet - time.Since(run.last); wait > 0 {
		p.mu.Unlock()
		time.AfterFunc(wait, func() { h.end(msg) })
		return
	}
	delete(p.runs, msg)
	p.mu.Unlock()
	if run.n == 0 {
		return
	}
	r := slog.NewRecord(time.Now(), slog.LevelWarn, msg+": the repeats stopped", 0)
	r.AddAttrs(slog.Int64("repeats", run.n), slog.Time("since", run.first), slog.Time("last", run.last))
	_ = h.next.Handle(context.Background(), r)
}
