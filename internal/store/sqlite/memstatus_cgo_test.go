//go:build cgo

package sqlite

import (
	"context"
	"testing"
)

// TestMemoryNotCounted checks that the C library does not count its memory
// (memstatus_cgo.go): with a store open, its connections' caches and
// statements allocated, the library reports none in use.
func TestMemoryNotCounted(t *testing.T) {
	s, err := Open(context.Background(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if memoryCounted() {
		t.Fatal("SQLite counts the memory it allocates: its statistics' mutex is taken on every allocation")
	}
}
