package reach_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/store"
)

// stalledAudit is an audit store whose appends wait while it is stalled:
// a writer stuck on a slow disk.
type stalledAudit struct {
	store.AuditLog
	once    sync.Once
	entered chan struct{} // closed when the first append waits
	release chan struct{} // closed to let appends through
}

func (s *stalledAudit) AppendAudit(ctx context.Context, recs []*store.AuditRecord, cps []store.AuditCheckpoint) error {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	return s.AuditLog.AppendAudit(ctx, recs, cps)
}

// A request lets an ended tool call go from memory only once its event is
// in the audit log: while the log's writer is stalled and its queue full,
// the events it drops are not lost from view too. Every call stays in the
// request's frames (those read back from the log, and those kept because
// the log lacks their event), each kept one marked, and the request counts
// the events the log lost. Before, a frame was let go once its event was
// handed to the log, dropped or not, and vanished from every view.
func TestAuditDropKeepsTheFrame(t *testing.T) {
	ctx := t.Context()
	mem := store.NewMemory()
	st := &stalledAudit{AuditLog: mem, entered: make(chan struct{}), release: make(chan struct{})}
	log, err := audit.New(ctx, st, &audit.Options{QueueSize: 4, Linger: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	hist := durable.NewHistory(mem, slog.New(slog.DiscardHandler))
	rt := reach.New(&reach.Options{Recorder: reach.Recorders(log), FrameWindow: 2, DisableLoopGuard: true,
		DefaultBudget: &reach.Budget{},
		StoredFrames: func(id string) []reach.PastFrame {
			if err := log.Flush(ctx); err != nil {
				t.Errorf("Flush: %v", err)
			}
			return hist.Frames(id)
		}})
	rt.MustRegister(reach.Tool{Name: "echo", Access: reach.Read, Func: echo})
	rctx, req := begin(t, rt, nil)
	var want []reach.FrameID
	run := func(i int) {
		res := call(rt, rctx, "echo", fmt.Sprintf(`{"i":%d}`, i))
		if res.IsError() {
			t.Fatalf("call %d: %s", i, res.ModelText())
		}
		want = append(want, res.Frame)
	}
	run(0)
	<-st.entered // the writer holds the first event, stalled
	for i := 1; i < 30; i++ {
		run(i)
	}
	dropped := log.Dropped()
	if dropped != 25 { // 1 in the writer, 4 queued
		t.Fatalf("the log dropped %d events, want 25", dropped)
	}
	close(st.release)
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 30; i < 40; i++ { // more calls: the request lets the stored ones go
		run(i)
		if err := log.Flush(ctx); err != nil { // none dropped: the queue holds 4
			t.Fatal(err)
		}
	}
	run(40)
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := log.Dropped(); got != dropped {
		t.Fatalf("the log dropped %d more events", got-dropped)
	}
	kept, gone := req.KeptFrames()
	if gone.Frames == 0 {
		t.Fatal("no frame was let go: the test shows nothing")
	}
	if got := req.AuditLost(); got != dropped {
		t.Errorf("AuditLost = %d, want %d (the events the log dropped)", got, dropped)
	}
	marked := 0
	for _, f := range kept {
		if f.AuditLost() {
			marked++
		}
	}
	if marked != int(dropped) {
		t.Errorf("%d frames kept marked AuditLost, want %d", marked, dropped)
	}
	fs := req.Frames()
	if len(fs) != len(want) {
		t.Fatalf("Frames: %d frames (%d kept, %d let go), want %d: the calls whose events were dropped are gone",
			len(fs), len(kept), gone.Frames, len(want))
	}
	for i, f := range fs {
		if f.ID != want[i] || f.State() != reach.Completed {
			t.Fatalf("frame %d is %v %s, want %v completed", i, f.ID, f.State(), want[i])
		}
	}
	rep, err := audit.Verify(ctx, mem)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if rep.Lost != dropped || rep.LossNotes != 1 {
		t.Errorf("Verify: %d lost in %d notes, want %d in 1", rep.Lost, rep.LossNotes, dropped)
	}
}
