package a2a

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TestStopWithoutWaitSkipsAgentsHeldEnd: a stop that does not wait for the
// agent (isolate, or a task without an id yet) while the agent's terminal
// state was read but not applied keeps what came before it and settles at
// once: the terminal state is held by the stop (stopping), so waiting for
// it to be applied kept the stop the whole CancelTimeout (a minute here)
// and the account blamed the store. Not waited for, the work read before
// the stop is applied and said kept.
func TestStopWithoutWaitSkipsAgentsHeldEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b := newReadBudget(1 << 20)
	g := &Gateway{opts: Options{CancelTimeout: time.Minute}, base: ctx, reads: b}
	in := newInbox(b)
	tk := &task{g: g, inboxes: []*inbox{in}}
	part := &a2a.TaskArtifactUpdateEvent{TaskID: "t1", Artifact: &a2a.Artifact{ID: "a1", Parts: a2a.ContentParts{a2a.NewTextPart("part 1")}}}
	end := &a2a.TaskStatusUpdateEvent{TaskID: "t1", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}
	for _, ev := range []a2a.Event{part, end} {
		if !in.put(ctx, inboxItem{ev: ev}, 1<<20, b) {
			t.Fatal("put refused")
		}
	}
	keep := tk.markSent() // the stop marks the stream before anything is applied
	applied := make(chan a2a.Event, 2)
	go func() { // the task's applier: takes in order, as the pump does
		for {
			it, ok := in.take()
			if !ok {
				return
			}
			applied <- it.ev
			in.done()
		}
	}()
	release, said := keep(false) // before the fix: a minute, then "not applied"
	if s := said(); strings.Contains(s, "not applied") || strings.Contains(s, "store") {
		t.Errorf("the stop's account %q; want part 1 kept, nothing blamed on the store", s)
	}
	if ev := <-applied; ev != part {
		t.Errorf("applied %T first, want part 1", ev)
	}
	select {
	case ev := <-applied:
		t.Errorf("applied %T while the stop held the agent's terminal state", ev)
	default:
	}
	release()
	if ev := <-applied; ev != end {
		t.Errorf("after the stop: applied %T, want the agent's terminal state", ev)
	}
	in.end()
}
