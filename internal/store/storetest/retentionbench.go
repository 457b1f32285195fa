package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// BenchRetentionSweep fills a store that open opens with requests*frames
// rows of old finished state (requests ended requests of frames checkpoints
// each) and times a whole sweep of them (store.SweepRetention, batches of
// batch requests, 0 for store.DefaultRetentionBatch, each one transaction),
// and a call's durable write (a waited PutFrame: the commit a write call
// waits for) one at a time, without the sweep and during it. open's store
// is closed at the end of each round.
func BenchRetentionSweep(b *testing.B, open func(testing.TB) store.Store, requests, frames, batch int) {
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		s := open(b)
		old := time.Now().Add(-time.Hour)
		args := []byte(`{"path":"/tmp/report.txt","content":"quarterly revenue by region, 2025"}`)
		for i := range requests {
			id := fmt.Sprintf("req_%016x", i)
			for j := range frames {
				s.QueueFrame(&store.Frame{Request: id, Frame: fmt.Sprintf("%016x", j+1), Kind: "tool", Name: "write_file",
					State: "completed", Args: args, Started: old})
			}
			s.QueueRequest(&store.Request{ID: id, Principal: "alice", State: "ended", Started: old, Ended: old})
		}
		if err := s.PutRequest(ctx, &store.Request{ID: "last", State: "running", Started: time.Now()}); err != nil {
			b.Fatal(err)
		}
		cut := time.Now()
		call := func(n int) (lat []time.Duration) {
			f := &store.Frame{Request: "live", Kind: "tool", Name: "write_file", State: "executing", Args: args}
			for i := range n {
				f.Frame, f.Started = fmt.Sprintf("%016x", i+1), time.Now()
				t := time.Now()
				if err := s.PutFrame(ctx, f); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			return lat
		}
		idle := call(2000)
		var during []time.Duration
		var sweeping atomic.Bool
		sweeping.Store(true)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for sweeping.Load() {
				during = append(during, call(1)...)
			}
		}()
		var batches []time.Duration
		sr := &timedRetention{Retention: s.(store.Retention), took: &batches}
		b.StartTimer()
		t := time.Now()
		got, err := store.SweepRetention(ctx, sr, store.RetentionOptions{Keep: time.Since(cut), Batch: batch})
		whole := time.Since(t)
		b.StopTimer()
		sweeping.Store(false)
		<-done
		if err != nil || got.Requests != int64(requests) || got.Frames != int64(requests*frames) {
			b.Fatalf("the sweep removed %+v, %v; want %d requests and %d frames", got, err, requests, requests*frames)
		}
		q := func(l []time.Duration, p float64) float64 {
			slices.Sort(l)
			return float64(l[int(p*float64(len(l)-1))].Microseconds())
		}
		b.ReportMetric(whole.Seconds(), "sweep-s")
		b.ReportMetric(float64(len(batches)), "batches")
		b.ReportMetric(q(batches, 0.5)/1000, "batch-p50-ms")
		b.ReportMetric(q(batches, 1)/1000, "batch-max-ms")
		b.ReportMetric(q(batches, 0.9)/1000, "batch-p90-ms")
		b.ReportMetric(q(idle, 0.5), "idle-call-p50-µs")
		b.ReportMetric(q(idle, 0.99), "idle-call-p99-µs")
		b.ReportMetric(q(idle, 1), "idle-call-max-µs")
		b.ReportMetric(q(during, 0.5), "sweep-call-p50-µs")
		b.ReportMetric(q(during, 0.99), "sweep-call-p99-µs")
		b.ReportMetric(q(during, 1), "sweep-call-max-µs")
		b.ReportMetric(float64(len(during)), "sweep-calls")
		s.Close()
	}
}

// timedRetention times each batch of a sweep.
type timedRetention struct {
	store.Retention
	took *[]time.Duration
}

func (r *timedRetention) SweepFinished(ctx context.Context, before time.Time, limit int) (store.Retained, error) {
	t := time.Now()
	got, err := r.Retention.SweepFinished(ctx, before, limit)
	*r.took = append(*r.took, time.Since(t))
	return got, err
}
