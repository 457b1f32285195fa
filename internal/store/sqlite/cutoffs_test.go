package sqlite

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store/storetest"
)

// The cut-off writes in the SQLite store: two runtimes over one store,
// a runtime of the next life (storetest.CutOffs).
func TestCutOffs(t *testing.T) {
	storetest.CutOffs(t, openSQLite(t, t.TempDir(), nil))
}

// BenchmarkCutOffMiss is what a write without a key of its own pays for
// the registry in the store: the read of a key with no cut-off write.
func BenchmarkCutOffMiss(b *testing.B) {
	s, err := Open(b.Context(), b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	for b.Loop() {
		if r, err := s.GetCutOff(b.Context(), "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", now); err != nil || r != nil {
			b.Fatal(r, err)
		}
	}
}
