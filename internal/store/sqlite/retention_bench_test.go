package sqlite

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/storetest"
)

// BenchmarkRetentionSweep fills a store with 100,000 rows of old finished
// state (20,000 ended requests of 4 frames each) and times a whole sweep
// of them, its batches, and a call's durable write one at a time without
// the sweep and during it (storetest.BenchRetentionSweep). Run with
// -benchtime 1x; REACH_BENCH_RETENTION_BATCH sets another batch size, and
// REACH_BENCH_RETENTION_KEPT a number of stopped requests older than them
// (never removed: a sweep should not read them).
//
//	go test -run '^$' -bench RetentionSweep -benchtime 1x ./internal/store/sqlite/
func BenchmarkRetentionSweep(b *testing.B) {
	batch, _ := strconv.Atoi(os.Getenv("REACH_BENCH_RETENTION_BATCH"))
	kept, _ := strconv.Atoi(os.Getenv("REACH_BENCH_RETENTION_KEPT"))
	storetest.BenchRetentionSweep(b, func(tb testing.TB) store.Store {
		s, err := Open(b.Context(), tb.TempDir(), nil)
		if err != nil {
			tb.Fatal(err)
		}
		older := time.Now().Add(-2 * time.Hour)
		for i := range kept {
			s.QueueRequest(&store.Request{ID: fmt.Sprintf("stopped_%016x", i), Principal: "mallory", State: "stopped", Started: older, Ended: older})
		}
		return s
	}, 20_000, 4, batch)
}
