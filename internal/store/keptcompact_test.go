package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
)

// stuckRecs is a Memory that refuses the completion of one key while
// stuck says so, and takes the others.
type stuckRecs struct {
	*Memory
	key   string
	stuck func() bool
}

func (r *stuckRecs) CompleteKey(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	if key == r.key && r.stuck() {
		return errors.New("could not serialize access")
	}
	return r.Memory.CompleteKey(ctx, key, owner, result, expires)
}

// TestKeptFileCompacted: a store that keeps refusing one completion while
// it takes the others left every completion it refused meanwhile in the
// kept file (journalDone removes it only once nothing is kept), which grew
// for as long as that lasted, and the next start read it whole. Past
// keptCompactLines lines, four times what is kept, it is rewritten with
// only what is kept, and a start after it still writes the completion the
// store refused.
func TestKeptFileCompacted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer func(n int) { keptCompactLines = n }(keptCompactLines)
		keptCompactLines = 40
		var stuck bool
		var mu = make(chan struct{}, 1)
		isStuck := func() bool { mu <- struct{}{}; defer func() { <-mu }(); return stuck }
		setStuck := func(v bool) { mu <- struct{}{}; stuck = v; <-mu }
		setStuck(true)
		mem := NewMemory()
		s := NewIdempotency(&stuckRecs{Memory: mem, key: "stuck", stuck: isStuck}, nil)
		path := filepath.Join(t.TempDir(), KeptFile)
		s.KeepFile(path)
		keptCall(t, s, "stuck", &reach.Result{Status: reach.StatusSuccess, Data: []byte(`"held"`)})
		for i := range 400 {
			key := "k" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			keptCall(t, s, key, &reach.Result{Status: reach.StatusSuccess, Data: []byte(`"ok"`)})
			if err := s.writeKept(t.Context(), key); err != nil {
				t.Fatalf("writing %s: %v", key, err)
			}
		}
		synctest.Wait() // the rewrite, on a goroutine of its own
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if lines := bytes.Count(b, []byte("\n")); lines > keptCompactLines {
			t.Errorf("the kept file holds %d lines for 1 completion kept; want at most %d", lines, keptCompactLines)
		}
		if !bytes.Contains(b, []byte(`"key":"stuck"`)) {
			t.Fatalf("the kept file lacks the completion still kept:\n%s", b)
		}
		// A start after a kill writes the completion from the file.
		setStuck(false)
		next := NewIdempotency(mem, nil)
		if n, err := next.RestoreKept(t.Context(), path); err != nil || n != 1 {
			t.Fatalf("RestoreKept wrote %d completions, err %v; want the one kept; file:\n%s", n, err, b)
		}
		rec, claimed, err := next.Claim(t.Context(), &reach.IdemClaim{Key: "stuck", Args: "a"})
		if err != nil || claimed || rec == nil || string(rec.Data) != `"held"` {
			t.Fatalf("the stuck key after a restart: %v claimed %v err %v; want its result", rec, claimed, err)
		}
		// The first life's keeper finds the key settled and ends.
		for s.keptLen() > 0 {
			time.Sleep(keptBackoff)
		}
		synctest.Wait()
	})
}

// TestKeptFileCompactCopyRemovedAtStart: a kill between compact's write of
// its copy and the rename left the copy (every completion still kept, with
// its result) in the data folder, and nothing removed it. The start that
// keeps the file (KeepFile) removes it; the kept file itself is kept.
func TestKeptFileCompactCopyRemovedAtStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, KeptFile)
	if err := os.WriteFile(path+keptCompactSuffix, []byte(`{"key":"k","result":"cut off"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"key":"k"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := NewIdempotency(NewMemory(), nil)
	s.KeepFile(path)
	if _, err := os.Stat(path + keptCompactSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the copy a cut-off rewrite left is still there after KeepFile (stat: %v)", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("KeepFile removed the kept file itself: %v", err)
	}
}
