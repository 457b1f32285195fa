package postgres

import (
	"os"
	"strconv"
	"testing"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/storetest"
)

// BenchmarkRetentionSweep is SQLite's on the throwaway cluster (fsync off),
// with 5,000 ended requests of 4 frames each (25,000 rows).
//
//	go test -run '^$' -bench RetentionSweep -benchtime 1x ./internal/store/postgres/
func BenchmarkRetentionSweep(b *testing.B) {
	batch, _ := strconv.Atoi(os.Getenv("REACH_BENCH_RETENTION_BATCH"))
	storetest.BenchRetentionSweep(b, func(tb testing.TB) store.Store {
		s, err := Open(b.Context(), pgtest.Database(tb), nil)
		if err != nil {
			tb.Fatal(err)
		}
		return s
	}, 5_000, 4, batch)
}
