package postgres

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/storetest"
)

// The cut-off writes in the PostgreSQL store: two runtimes over one
// store, a runtime of the next life (storetest.CutOffs).
func TestCutOffs(t *testing.T) {
	storetest.CutOffs(t, openPostgres(t, pgtest.Database(t)))
}

// BenchmarkCutOffMiss is what a write without a key of its own pays for
// the registry in the store: the read of a key with no cut-off write (one
// round trip).
func BenchmarkCutOffMiss(b *testing.B) {
	s := openPostgres(b, pgtest.Database(b))
	now := time.Now()
	for b.Loop() {
		if r, err := s.GetCutOff(b.Context(), "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", now); err != nil || r != nil {
			b.Fatal(r, err)
		}
	}
}
