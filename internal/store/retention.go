package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Retained counts the rows a retention sweep removed.
type Retained struct {
	Requests  int64 // finished requests
	Frames    int64 // their checkpoints
	Tasks     int64 // A2A tasks in a final state
	Approvals int64 // approvals decided, used or expired
}

// Rows is every row counted.
func (r Retained) Rows() int64 { return r.Requests + r.Frames + r.Tasks + r.Approvals }

func (r *Retained) add(o Retained) {
	r.Requests += o.Requests
	r.Frames += o.Frames
	r.Tasks += o.Tasks
	r.Approvals += o.Approvals
}

// Retention is a store whose finished state can be removed once it is old
// (the configuration's retention, docs/STATE.md "Retention"): the SQLite
// and PostgreSQL stores. Never removed by it: a request still running (or
// one whose parent or a child of it runs), a request stopped or interrupted
// (its row refuses its id to new work), a request with a dead letter open or
// taken, a request that a task not final names,
// a pending approval (or an approved one whose call may still come),
// a task not final, dead letters, the audit log, the idempotency records
// (their own sweep removes them when they expire) and MCP sessions (theirs).
type Retention interface {
	// SweepFinished removes, in one transaction, up to limit finished
	// requests last written before before, each with its frames and
	// ledger (all or nothing of a request), up to limit final A2A tasks
	// and up to limit decided approvals last written before it, the
	// oldest first, and says how many of each.
	SweepFinished(ctx context.Context, before time.Time, limit int) (Retained, error)
	// RetainedTotal is what SweepFinished removed since the store opened.
	RetainedTotal() Retained
}

// RetentionOptions configure RunRetention.
type RetentionOptions struct {
	// Keep is how long finished state is kept after its last write; zero
	// (or less) keeps it all, and RunRetention returns at once.
	Keep time.Duration
	// Every is the time between sweeps; if zero, an hour, or Keep if it
	// is shorter.
	Every time.Duration
	// Batch is how many rows of each kind one transaction removes; if
	// zero, DefaultRetentionBatch.
	Batch int
	// Logger logs a line for each sweep that removed something.
	Logger *slog.Logger
	// Now, if not nil, is the clock (tests).
	Now func() time.Time
}

// DefaultRetentionBatch is the rows of each kind a batch of the sweep
// removes: on SQLite a batch of 64 finished requests of 4 frames each
// holds the writer for about 0.7 ms (1.9 ms for 256; docs/BENCHMARKS.md,
// "Retention"), which is as long as a call's write may wait for it.
const DefaultRetentionBatch = 64

// RunRetention sweeps r once at once, and then every o.Every, until ctx
// ends: see SweepRetention.
func RunRetention(ctx context.Context, r Retention, o RetentionOptions) {
	if o.Keep <= 0 {
		return
	}
	every := o.Every
	if every <= 0 {
		every = min(time.Hour, o.Keep)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		SweepRetention(ctx, r, o)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SweepRetention removes what r holds that finished more than o.Keep ago,
// a batch (one transaction) at a time, until a batch finds less than a
// batch's worth or ctx ends. After each batch it pauses as long as the
// batch took (at least a millisecond), so that the sweep holds the
// store's writer at most about half of the time and the calls' writes
// go between its batches. It logs a line if it removed anything, and
// returns what it removed.
func SweepRetention(ctx context.Context, r Retention, o RetentionOptions) (Retained, error) {
	var all Retained
	if o.Keep <= 0 {
		return all, nil
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	batch := o.Batch
	if batch <= 0 {
		batch = DefaultRetentionBatch
	}
	before := now().Add(-o.Keep)
	began := time.Now()
	var err error
	batches := 0
	for ctx.Err() == nil {
		t := time.Now()
		var got Retained
		got, err = r.SweepFinished(ctx, before, batch)
		if err != nil {
			if ctx.Err() != nil { // the gateway closes: not a failure
				err = nil
			}
			break
		}
		batches++
		all.add(got)
		b := int64(batch)
		if got.Requests < b && got.Tasks < b && got.Approvals < b {
			break
		}
		pause := max(time.Since(t), time.Millisecond)
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
	if o.Logger != nil && (all.Rows() > 0 || err != nil) {
		args := []any{"retention", FormatKeep(o.Keep), "before", before.UTC().Format(time.RFC3339), "requests", all.Requests, "frames", all.Frames,
			"tasks", all.Tasks, "approvals", all.Approvals, "batches", batches, "took", time.Since(began).Round(time.Millisecond)}
		if err != nil {
			o.Logger.Error("retention: sweep failed", append(args, "err", err)...)
		} else {
			o.Logger.Info("retention: removed finished state", append(args, "hint", retentionHint)...)
		}
	}
	return all, err
}

// retentionHint ends the line of a sweep that removed something: the first
// sweep of an upgraded gateway removes at once all that finished more than
// the retention before, which its operator may not expect.
const retentionHint = "the removed requests' audit events remain (reach audit show ID); " +
	"to keep finished state longer, set retention: in the configuration (retention: forever keeps all)"

// FormatKeep writes a retention d as the configuration reads and writes
// it (config.Retention): days when whole days ("30d"), else a Go duration.
func FormatKeep(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
