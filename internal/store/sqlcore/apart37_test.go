package sqlcore

import (
	"testing"
	"time"
)

// TestWriterApartWriteLeadsTheNextBatch37: a write marked Apart (one that
// takes a lock every instance takes in one order, at the head of its
// transaction: PostgreSQL's handed tasks) queued while a batch is held
// open for a claim's checkpoint does not join that batch, whose
// statements were already sent: the held batch commits without it, and it
// leads the next. Before, it joined, and took its lock after the held
// batch's, in the middle of a transaction.
func TestWriterApartWriteLeadsTheNextBatch37(t *testing.T) {
	wr, e := claimed(t, time.Minute, 0, "r\x00f")
	done := make(chan error, 1)
	go func() {
		done <- wr.Do(t.Context(), &Write{Apart: true, Run: func(b Batch, w *Write) {
			b.Exec(w, StHandedPut, []any{"apart"}, nil)
		}})
	}()
	select {
	case err := <-e.commits: // the held batch, without waiting for its checkpoint
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the held batch waited for its checkpoint with an Apart write queued")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.execs) != 2 || len(e.execs[1]) != 1 || e.execs[1][0] != "apart" {
		t.Fatalf("statements run %v; want the claim's, then the Apart write's", e.execs)
	}
	if n := wr.Stats().Batches; n != 2 {
		t.Errorf("%d commits; want 2 (the held batch, then the Apart write's)", n)
	}
}
