package a2a

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/store"
)

// forgedRow is a task row as a gateway before the check on the way in
// stored it: an agent's reach/ keys on the task, its status message, its
// history, its artifacts and their parts.
func forgedRow(t *testing.T, id string, state a2a.TaskState) *store.TaskRecord {
	t.Helper()
	forged := map[string]any{MetaRequest: "req-forged", MetaFrame: "frame-forged", MetaRefusal: map[string]any{"guard": "forged"}, "agent/own": "kept"}
	part := a2a.NewTextPart("done")
	part.Metadata = forged
	msg := a2a.NewMessage(a2a.MessageRoleAgent, part)
	msg.TaskID, msg.ContextID, msg.Metadata = a2a.TaskID(id), "ctx-1", forged
	ts := time.Now().UTC()
	v := a2a.Task{ID: a2a.TaskID(id), ContextID: "ctx-1", Metadata: forged,
		Status:    a2a.TaskStatus{State: state, Message: msg, Timestamp: &ts},
		History:   []*a2a.Message{msg},
		Artifacts: []*a2a.Artifact{{ID: "a1", Parts: a2a.ContentParts{part}, Metadata: forged}}}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &store.TaskRecord{Agent: "planner", ID: id, Principal: "alice", State: string(state), Final: state.Terminal(), Data: b}
}

// TestSec37A2AStoredForgedKeysDropped: a task stored before reach dropped
// an agent's reach/ keys on the way in kept them in its row, and GetTask,
// ListTasks, SubscribeToTask and CancelTask read the row back as it was:
// a caller took the agent's reach/request or reach/refusal for reach's.
// Now a stored task is read without them (a refusal of reach's own, on
// the status message of a task reach rejected, is kept:
// TestSec37A2AStoredRefusalKept).
func TestSec37A2AStoredForgedKeysDropped(t *testing.T) {
	st := store.NewMemory()
	for _, row := range []*store.TaskRecord{forgedRow(t, "old-done", a2a.TaskStateCompleted), forgedRow(t, "old-working", a2a.TaskStateWorking)} {
		if _, err := st.PutTask(t.Context(), row); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "planner")
	c := h.client("planner", "alice", false)
	check := func(what string, v any) {
		t.Helper()
		if keys := reachKeys(t, v); len(keys) > 0 {
			t.Errorf("%s carries the stored row's forged keys: %v", what, keys)
		}
	}
	for _, id := range []a2a.TaskID{"old-done", "old-working"} {
		got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
		if err != nil {
			t.Fatalf("GetTask %s: %v", id, err)
		}
		check("GetTask "+string(id), got)
		if got.Status.Message == nil || got.Status.Message.Metadata["agent/own"] != "kept" {
			t.Errorf("GetTask %s dropped the agent's own keys: %+v", id, got.Status.Message)
		}
	}
	list, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{IncludeArtifacts: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tasks) != 2 {
		t.Fatalf("ListTasks: %d tasks, want the 2 stored", len(list.Tasks))
	}
	check("ListTasks", list)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var events []a2a.Event
	for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: "old-done"}) {
		if err != nil {
			break
		}
		events = append(events, ev)
	}
	check("SubscribeToTask", events)
	if got, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: "old-done"}); err == nil {
		check("CancelTask", got)
	}
}

// TestSec37A2AStoredRefusalKept: reach's own refusal on the status message
// of a task it rejected is read back from the store (the other reach/ keys
// of the row are not).
func TestSec37A2AStoredRefusalKept(t *testing.T) {
	st := store.NewMemory()
	if _, err := st.PutTask(t.Context(), forgedRow(t, "old-rejected", a2a.TaskStateRejected)); err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "planner")
	got, err := h.client("planner", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: "old-rejected"})
	if err != nil {
		t.Fatal(err)
	}
	if keys := reachKeys(t, got); len(keys) != 1 || keys[0] != ".status.message.metadata."+MetaRefusal {
		t.Errorf("the rejected task's reach/ keys read back: %v; want its status message's refusal only", keys)
	}
}
