package a2a

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// nullParts returns where ev holds a null part, or "".
func nullParts(ev a2a.Event) string {
	has := func(ps a2a.ContentParts) bool {
		for _, p := range ps {
			if p == nil {
				return true
			}
		}
		return false
	}
	msg := func(m *a2a.Message) bool { return m != nil && has(m.Parts) }
	switch e := ev.(type) {
	case *a2a.Message:
		if msg(e) {
			return "the message"
		}
	case *a2a.Task:
		if msg(e.Status.Message) {
			return "the task's status message"
		}
		for _, m := range e.History {
			if msg(m) {
				return "a history message"
			}
		}
		for _, a := range e.Artifacts {
			if a != nil && has(a.Parts) {
				return "an artifact"
			}
		}
	case *a2a.TaskStatusUpdateEvent:
		if msg(e.Status.Message) {
			return "a status update's message"
		}
	case *a2a.TaskArtifactUpdateEvent:
		if e.Artifact != nil && has(e.Artifact.Parts) {
			return "an artifact update"
		}
	}
	return ""
}

// TestAttack25NullPartsFromAgent: an agent whose messages, status messages
// and artifacts hold null parts has them dropped before reach relays or
// keeps them: the caller's send, its stream and GetTask show none, and the
// texts around them arrive. They reached the caller as they were.
func TestAttack25NullPartsFromAgent(t *testing.T) {
	cases := map[string]func(m *a2a.Message) []a2a.Event{
		"message": func(m *a2a.Message) []a2a.Event {
			return []a2a.Event{&a2a.Message{ID: "m1", Role: a2a.MessageRoleAgent, Parts: a2a.ContentParts{nil, a2a.NewTextPart("hi")}}}
		},
		"task": func(m *a2a.Message) []a2a.Event {
			info := a2a.TaskInfo{TaskID: a2a.NewTaskID(), ContextID: "c"}
			return []a2a.Event{
				&a2a.Task{ID: info.TaskID, ContextID: info.ContextID, History: []*a2a.Message{m, {ID: "h", Role: a2a.MessageRoleAgent, Parts: a2a.ContentParts{nil, a2a.NewTextPart("seen")}}},
					Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Message: &a2a.Message{ID: "s", Role: a2a.MessageRoleAgent, Parts: a2a.ContentParts{nil, a2a.NewTextPart("working")}}}},
				&a2a.TaskArtifactUpdateEvent{TaskID: info.TaskID, ContextID: info.ContextID, Artifact: &a2a.Artifact{ID: "a", Parts: a2a.ContentParts{nil, a2a.NewTextPart("the "), nil}}},
				&a2a.TaskArtifactUpdateEvent{TaskID: info.TaskID, ContextID: info.ContextID, Append: true, LastChunk: true, Artifact: &a2a.Artifact{ID: "a", Parts: a2a.ContentParts{a2a.NewTextPart("answer"), nil}}},
				&a2a.TaskStatusUpdateEvent{TaskID: info.TaskID, ContextID: info.ContextID, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted,
					Message: &a2a.Message{ID: "e", Role: a2a.MessageRoleAgent, Parts: a2a.ContentParts{nil, a2a.NewTextPart("done")}}}},
			}
		},
	}
	for name, evs := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHostileHarness(t, nil, func(ctx context.Context, m *a2a.Message) iter.Seq2[a2a.Event, error] {
				return func(yield func(a2a.Event, error) bool) {
					for _, e := range evs(m) {
						if !yield(e, nil) {
							return
						}
					}
				}
			})
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			send := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))}
			res, err := h.client("hostile", "alice", false).SendMessage(ctx, send)
			if err != nil {
				t.Fatalf("the send: %v", err)
			}
			if where := nullParts(res); where != "" {
				t.Errorf("the send's answer holds a null part in %s: %+v", where, res)
			}
			if tk, ok := res.(*a2a.Task); ok {
				want := textOf(a2a.ContentParts{a2a.NewTextPart("the "), a2a.NewTextPart("answer")}) // the two chunks' texts
				if tk.Status.State != a2a.TaskStateCompleted || artifactsText(tk) != want {
					t.Errorf("the task: %s, artifacts %q; want completed, %q", tk.Status.State, artifactsText(tk), want)
				}
				got, err := h.client("hostile", "alice", false).GetTask(ctx, &a2a.GetTaskRequest{ID: tk.ID})
				if err != nil {
					t.Fatalf("GetTask: %v", err)
				}
				if where := nullParts(got); where != "" {
					t.Errorf("GetTask holds a null part in %s", where)
				}
			} else if m, ok := res.(*a2a.Message); !ok || textOf(m.Parts) != "hi" {
				t.Errorf("the send answered %+v, want the message hi", res)
			}
			send.Message = a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("again"))
			for ev, err := range h.client("hostile", "alice", false).SendStreamingMessage(ctx, send) {
				if err != nil {
					t.Fatalf("the stream: %v", err)
				}
				if where := nullParts(ev); where != "" {
					t.Errorf("the stream's %T holds a null part in %s", ev, where)
				}
			}
		})
	}
}
