package store

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// fakeRetention has n finished requests, each removed with 3 frames.
type fakeRetention struct {
	n       int64
	befores []time.Time
	total   Retained
}

func (f *fakeRetention) SweepFinished(_ context.Context, before time.Time, limit int) (Retained, error) {
	f.befores = append(f.befores, before)
	k := min(f.n, int64(limit))
	f.n -= k
	got := Retained{Requests: k, Frames: 3 * k}
	f.total.add(got)
	return got, nil
}

func (f *fakeRetention) RetainedTotal() Retained { return f.total }

// A sweep removes in batches until one finds less than a batch, with the
// cutoff its Keep before now, and logs one line of what it removed; a
// sweep that removed nothing logs nothing; Keep 0 removes nothing.
func TestSweepRetention(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var logs bytes.Buffer
	o := RetentionOptions{Keep: 30 * 24 * time.Hour, Batch: 10, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	f := &fakeRetention{n: 25}
	got, err := SweepRetention(t.Context(), f, o)
	if err != nil || got != (Retained{Requests: 25, Frames: 75}) {
		t.Fatalf("SweepRetention = %+v, %v; want the 25 requests and their 75 frames", got, err)
	}
	if len(f.befores) != 3 {
		t.Errorf("%d batches for 25 requests by 10, want 3", len(f.befores))
	}
	for _, b := range f.befores {
		if !b.Equal(now.Add(-o.Keep)) {
			t.Errorf("a batch's cutoff is %v, want %v", b, now.Add(-o.Keep))
		}
	}
	if n := strings.Count(logs.String(), "retention: removed"); n != 1 || !strings.Contains(logs.String(), "requests=25") {
		t.Errorf("the sweep logged %d lines, want 1 with requests=25:\n%s", n, logs.String())
	}
	logs.Reset()
	if got, err := SweepRetention(t.Context(), f, o); err != nil || got.Rows() != 0 || logs.Len() != 0 {
		t.Errorf("a sweep with nothing to remove = %+v, %v, and logged %q; want nothing", got, err, logs.String())
	}
	f = &fakeRetention{n: 5}
	if got, _ := SweepRetention(t.Context(), f, RetentionOptions{}); got.Rows() != 0 || len(f.befores) != 0 {
		t.Errorf("Keep 0 swept %+v in %d batches, want nothing", got, len(f.befores))
	}
}
