package audit_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
)

// keptLog counts what Keep reported for each event.
type keptLog struct {
	mu       sync.Mutex
	kept     int
	lost     int
	reported int
}

func (k *keptLog) cb(ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.reported++
	if ok {
		k.kept++
	} else {
		k.lost++
	}
}

func (k *keptLog) counts() (kept, lost, reported int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kept, k.lost, k.reported
}

// Keep says, for each event, whether it was stored: false at once for one
// dropped (the writer stalled, the queue full), true once its commit is
// done, false for one whose commit failed. The chain says what was lost,
// where (a loss note before the next batch), and Verify counts it: the
// chain stays whole.
func TestKeepReportsLossesAndTheChainNotesThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		mem := store.NewMemory()
		bs := &blockingStore{AuditLog: mem, release: make(chan struct{})}
		l, err := audit.New(ctx, bs, &audit.Options{QueueSize: 4, Linger: -1})
		if err != nil {
			t.Fatal(err)
		}
		var k keptLog
		e := &reach.Event{Time: time.Now(), Request: "r", Kind: reach.ToolFrame, Name: "t", State: reach.Completed}
		l.Keep(ctx, e, reach.ReceiptFunc(k.cb))
		synctest.Wait() // the writer took it and is stuck in AppendAudit
		for range 10 {
			l.Keep(ctx, e, reach.ReceiptFunc(k.cb))
		}
		if kept, lost, n := k.counts(); kept != 0 || lost != 6 || n != 6 {
			t.Fatalf("with the writer stalled: %d kept, %d lost of %d reported; want 0, 6, 6 (1 in the writer, 4 queued, 6 dropped)", kept, lost, n)
		}
		close(bs.release)
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if kept, lost, n := k.counts(); kept != 5 || lost != 6 || n != 11 {
			t.Fatalf("after the commit: %d kept, %d lost of %d reported; want 5, 6, 11", kept, lost, n)
		}

		// A failed commit: its events are reported lost, and noted.
		bs.fail = errors.New("disk full")
		l.Keep(ctx, e, reach.ReceiptFunc(k.cb))
		l.Keep(ctx, e, reach.ReceiptFunc(k.cb))
		if err := l.Flush(ctx); err == nil {
			t.Fatal("Flush of a failed commit: no error")
		}
		if kept, lost, _ := k.counts(); kept != 5 || lost != 8 {
			t.Fatalf("after a failed commit: %d kept, %d lost; want 5, 8", kept, lost)
		}
		bs.fail = nil
		l.Keep(ctx, e, reach.ReceiptFunc(k.cb))
		l.Close()
		if kept, lost, n := k.counts(); kept != 6 || lost != 8 || n != 14 {
			t.Fatalf("at the end: %d kept, %d lost of %d reported; want 6, 8, 14", kept, lost, n)
		}
		if s := l.Stats(); s.Dropped != 6 || s.Failed != 2 {
			t.Errorf("Stats: %d dropped, %d failed; want 6, 2", s.Dropped, s.Failed)
		}

		rep, err := audit.Verify(ctx, mem)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		// 1 + 4 events, a note, the last event after its note.
		if rep.Events != 8 || rep.Lost != 8 || rep.LossNotes != 2 {
			t.Errorf("Verify: %d events, %d lost in %d notes; want 8 events, 8 lost in 2 notes", rep.Events, rep.Lost, rep.LossNotes)
		}
		recs, err := mem.ScanAudit(ctx, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var notes []audit.Loss
		var at []int64
		for _, r := range recs {
			var ev audit.Event
			if err := json.Unmarshal(r.Data, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Kind != audit.LossKind {
				continue
			}
			var loss audit.Loss
			if ev.Code != audit.LossCode || ev.Decision != audit.LossDecision || json.Unmarshal(ev.Args, &loss) != nil {
				t.Fatalf("loss note %d: %s", r.Seq, r.Data)
			}
			notes, at = append(notes, loss), append(at, r.Seq)
		}
		// The first note comes right after the event the stalled writer
		// held (the events queued behind it follow it in the same batch);
		// the second before the event after the failed commit.
		if want := []audit.Loss{{Dropped: 6}, {Failed: 2}}; len(notes) != 2 || notes[0] != want[0] || notes[1] != want[1] {
			t.Errorf("loss notes %v at seqs %v, want %v", notes, at, want)
		} else if at[0] != 2 || at[1] != 7 {
			t.Errorf("loss notes at seqs %v, want 2 and 7", at)
		}
	})
}
