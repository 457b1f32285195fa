package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// RetentionSetup fills s with finished and live state, all of it written
// before the returned cutoff but for the request "new": what a retention
// sweep with that cutoff must remove and keep is what CheckRetained checks.
func RetentionSetup(t *testing.T, s store.Store) (cut time.Time) {
	t.Helper()
	ctx := t.Context()
	t1 := time.Now().Add(-time.Hour)
	req := func(id, parent, state string, frames int) {
		t.Helper()
		r := &store.Request{ID: id, Parent: parent, Principal: "alice", State: state, Started: t1}
		if state != "running" {
			r.Ended = t1.Add(time.Minute)
		}
		for i := range frames {
			f := &store.Frame{Request: id, Frame: fmt.Sprintf("%016x", i+1), Kind: "tool", Name: "write_file", State: "completed",
				Args: []byte(`{}`), Started: t1.Add(time.Duration(i) * time.Second)}
			if state == "running" && i == frames-1 {
				f.State = "executing"
			}
			if err := s.PutFrame(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.PutRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Debit(ctx, id, store.Spend{ToolCalls: 1}, store.Spend{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		req(fmt.Sprintf("old-ended-%d", i), "", "ended", 3)
	}
	req("old-stopped", "", "stopped", 2)
	req("old-interrupted", "", "interrupted", 1)
	req("old-running", "", "running", 2)
	req("child-of-running", "old-running", "ended", 2)
	// A parent that ended while its child runs on (a delegation whose
	// sub-request outlives it): the child's admissions debit the
	// parent's ledger, and its stop and recovery look for the parent.
	req("parent-of-running", "", "ended", 1)
	req("running-child", "parent-of-running", "running", 0)
	req("dead-lettered", "", "ended", 2)
	if _, err := s.AddDeadLetter(ctx, &store.DeadLetter{Request: "dead-lettered", Frame: "0000000000000001", Tool: "undo_write",
		Error: "unreachable", State: store.DeadOpen}); err != nil {
		t.Fatal(err)
	}
	// An ended request that an A2A task not yet final names: the task
	// may still be resumed or canceled with it.
	req("of-working-task", "", "ended", 1)
	task := func(id, request string, final bool) {
		t.Helper()
		state := "working"
		if final {
			state = "completed"
		}
		if _, err := s.PutTask(ctx, &store.TaskRecord{Agent: "planner", ID: id, Principal: "alice", Request: request, State: state, Final: final,
			Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	task("task-done", "old-ended-0", true)
	task("task-working", "of-working-task", false)
	appr := func(id, status string) {
		t.Helper()
		if err := s.PutApproval(ctx, &store.ApprovalRecord{ID: id, Key: "k-" + id, Status: status, Created: t1,
			Expires: t1.Add(time.Minute), Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	appr("appr-pending", "pending")
	appr("appr-used", "used")
	appr("appr-denied", "denied")
	appr("appr-expired", "expired")
	// Denied, and its denial not audited yet (its mark): kept, however
	// old, for the restart or a survivor that audits it.
	if err := s.PutApproval(ctx, &store.ApprovalRecord{ID: "appr-unaudited", Key: "k-appr-unaudited", Status: "denied", Created: t1,
		Expires: t1.Add(time.Minute), Data: []byte(`{"status":"denied",` + store.UnauditedMark + `}`)}); err != nil {
		t.Fatal(err)
	}
	// The audit log's keys of their actions (audit_once): removed with
	// their approval, kept with it.
	head, _, err := s.AuditHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var recs []*store.AuditRecord
	for _, k := range append(retainedOnces, keptOnces...) {
		head++
		recs = append(recs, &store.AuditRecord{Seq: head, Time: t1, Data: []byte(`{}`), PrevHash: make([]byte, 32), Hash: make([]byte, 32), Once: k})
	}
	if err := s.AppendAudit(ctx, recs, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	cut = time.Now()
	time.Sleep(2 * time.Millisecond)
	req("new", "", "ended", 1)
	return cut
}

// Retained and kept by a sweep of RetentionSetup's state.
var (
	retainedRequests = []string{"old-ended-0", "old-ended-1", "old-ended-2", "old-ended-3", "old-ended-4"}
	// A stopped or interrupted request stays, however old: its row is
	// what refuses a call naming its id (docs/STATE.md, "Interrupted and
	// stopped requests": its id starts no new work).
	keptRequests = []string{"old-stopped", "old-interrupted", "old-running", "child-of-running", "parent-of-running", "dead-lettered", "of-working-task", "new"}
)

// The audit log's keys of approvals' actions (store.ApprovalOnce) that a
// sweep of RetentionSetup's state removes with their approval, and keeps
// with theirs.
var (
	retainedOnces = []string{store.ApprovalOnce("appr-denied", "requested", "user"), store.ApprovalOnce("appr-denied", "denied", "user"),
		store.ApprovalOnce("appr-used", "voted", "user+reviewer"), store.ApprovalOnce("appr-used", "approved", "user+reviewer"),
		store.ApprovalOnce("appr-used", "used", "user+reviewer"), store.ApprovalOnce("appr-expired", "expired", "user")}
	keptOnces = []string{store.ApprovalOnce("appr-pending", "requested", "user"), store.ApprovalOnce("appr-unaudited", "requested", "user")}
)

// onceHeld reports whether s's audit log holds key (audit_once): asked
// (store.AuditOnces), or, for a store that looks its keys up as it
// chains, a record of key appended (held: not appended).
func onceHeld(t *testing.T, s store.Store, key string) bool {
	t.Helper()
	if ao, ok := s.(store.AuditOnces); ok {
		held, err := ao.HeldOnces(t.Context(), []string{key})
		if err != nil {
			t.Fatal(err)
		}
		return held[key]
	}
	ch, ok := s.(store.AuditChainer)
	if !ok {
		t.Fatalf("%T neither tells its audit keys nor chains", s)
	}
	r := &store.AuditRecord{Time: time.Now(), Data: []byte(`{}`), Once: key}
	if err := ch.AppendAuditChained(t.Context(), []*store.AuditRecord{r}, func(seq int64, hash []byte) []store.AuditCheckpoint {
		r.Seq, r.PrevHash, r.Hash = seq+1, hash, make([]byte, 32)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return r.Held
}

// RetentionRemoved is what a whole sweep of RetentionSetup's state removes.
var RetentionRemoved = store.Retained{Requests: 5, Frames: 15, Tasks: 1, Approvals: 3}

// CheckRetained checks what a sweep of RetentionSetup's state left in s.
func CheckRetained(t *testing.T, s store.Store) {
	t.Helper()
	ctx := t.Context()
	for _, id := range retainedRequests {
		if r, err := s.GetRequest(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetRequest(%s) after the sweep = %+v, %v; want it removed", id, r, err)
		}
		if fs, err := s.RequestFrames(ctx, id); err != nil || len(fs) != 0 {
			t.Errorf("RequestFrames(%s) after the sweep = %d frames, %v; want none", id, len(fs), err)
		}
	}
	for _, id := range keptRequests {
		if _, err := s.GetRequest(ctx, id); err != nil {
			t.Errorf("GetRequest(%s) after the sweep: %v; want it kept", id, err)
		}
		if fs, err := s.RequestFrames(ctx, id); err != nil || len(fs) == 0 {
			t.Errorf("RequestFrames(%s) after the sweep = %d frames, %v; want them kept", id, len(fs), err)
		}
		if sp, err := s.Spent(ctx, id); err != nil || sp.ToolCalls != 1 {
			t.Errorf("Spent(%s) after the sweep = %+v, %v; want its ledger kept", id, sp, err)
		}
	}
	for _, id := range []string{"old-stopped", "old-interrupted"} {
		err := s.PutRequest(ctx, &store.Request{ID: id, Principal: "mallory", State: "running", Started: time.Now()})
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("PutRequest(%s, running) after the sweep: %v; want ErrConflict (its id starts no new work)", id, err)
		}
	}
	if open, err := s.OpenFrames(ctx); err != nil || len(open) != 1 || open[0].Request != "old-running" {
		t.Errorf("OpenFrames after the sweep = %v, %v; want the running request's one", frameIDs(open), err)
	}
	if _, err := s.GetTask(ctx, "planner", "task-done"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTask(task-done) after the sweep: %v; want it removed", err)
	}
	if _, err := s.GetTask(ctx, "planner", "task-working"); err != nil {
		t.Errorf("GetTask(task-working) after the sweep: %v; want it kept", err)
	}
	for id, kept := range map[string]bool{"appr-pending": true, "appr-used": false, "appr-denied": false, "appr-expired": false, "appr-unaudited": true} {
		_, err := s.GetApproval(ctx, id)
		if kept && err != nil || !kept && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetApproval(%s) after the sweep: %v; want it kept: %v", id, err, kept)
		}
	}
	if dl, err := s.ListDeadLetters(ctx, store.DeadOpen); err != nil || len(dl) != 1 {
		t.Errorf("ListDeadLetters after the sweep = %d, %v; want the one kept", len(dl), err)
	}
}

// checkOnces checks the audit log's keys a sweep of RetentionSetup's
// state left in s: those of the approvals it removed are gone, the
// others' kept. (Once: on a store that chains, the look appends.)
func checkOnces(t *testing.T, s store.Store) {
	t.Helper()
	for _, k := range retainedOnces {
		if onceHeld(t, s, k) {
			t.Errorf("the audit log's key %q after the sweep removed its approval: held; want it removed with it", k)
		}
	}
	for _, k := range keptOnces {
		if !onceHeld(t, s, k) {
			t.Errorf("the audit log's key %q after the sweep kept its approval: gone; want it kept", k)
		}
	}
}

// Retention checks a store's retention sweep: what goes and what stays,
// in batches of 2 (each whole), and, with reopen (which closes s and opens
// the same data again), that the rest is there after a restart and that
// the next frames are found open.
func Retention(t *testing.T, s store.Store, reopen func(t *testing.T) store.Store) {
	ctx := t.Context()
	r, ok := s.(store.Retention)
	if !ok {
		t.Fatalf("%T is not a store.Retention", s)
	}
	cut := RetentionSetup(t, s)
	var all store.Retained
	batches := 0
	for {
		got, err := r.SweepFinished(ctx, cut, 2)
		if err != nil {
			t.Fatal(err)
		}
		batches++
		if got.Requests > 2 || got.Tasks > 2 || got.Approvals > 2 {
			t.Fatalf("a batch of 2 removed %+v", got)
		}
		all.Requests += got.Requests
		all.Frames += got.Frames
		all.Tasks += got.Tasks
		all.Approvals += got.Approvals
		if got.Rows() == 0 {
			break
		}
		if batches > 20 {
			t.Fatal("the sweep does not end")
		}
	}
	if all != RetentionRemoved {
		t.Errorf("the sweep removed %+v, want %+v", all, RetentionRemoved)
	}
	if got := r.RetainedTotal(); got != RetentionRemoved {
		t.Errorf("RetainedTotal = %+v, want %+v", got, RetentionRemoved)
	}
	CheckRetained(t, s)
	checkOnces(t, s)
	if reopen == nil {
		return
	}
	s = reopen(t)
	CheckRetained(t, s)
	// A frame written now is found open: the sweep left no mark above it.
	f := &store.Frame{Request: "new-run", Frame: "00000000000000aa", Kind: "tool", Name: "write_file", State: "executing", Started: time.Now()}
	if err := s.PutFrame(ctx, f); err != nil {
		t.Fatal(err)
	}
	open, err := s.OpenFrames(ctx)
	if err != nil || len(open) != 2 {
		t.Errorf("OpenFrames after a restart and a new checkpoint = %v, %v; want the running request's and the new one", frameIDs(open), err)
	}
}
