package sqlite

import "testing"

// TestWriterCacheSize checks the writer's page cache is 1 MiB, not
// SQLite's default 2 MiB: it is C memory, outside Go's soft limit, and
// counts in full in `reach serve`'s RSS (docs/BENCHMARKS.md, "Memory").
func TestWriterCacheSize(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	var kib int
	if err := s.wc.QueryRowContext(t.Context(), `PRAGMA cache_size`).Scan(&kib); err != nil {
		t.Fatal(err)
	}
	if kib != -1024 {
		t.Errorf("the writer's PRAGMA cache_size = %d, want -1024 (1 MiB)", kib)
	}
}
