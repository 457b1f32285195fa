package reach

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/redact"
)

// TestRecordPreparedWhileWaiting: a tool whose client calls the attempt's
// Waiting (the wire client does, once the upstream has the request) has
// the unchanging part of its frame's event made there, once however often
// Waiting runs; record then uses that event, not a second one, and it says
// what an event made without the wait says (the arguments masked alike).
// Waiting after the frame was recorded makes nothing.
func TestRecordPreparedWhileWaiting(t *testing.T) {
	const secret = "sk-live-0123456789abcdefghijklmnopqrstuv"
	red, err := redact.New(&redact.Options{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	var events []*Event
	rt := New(&Options{Redactor: red, Recorder: recorderOf(func(e *Event) { events = append(events, e) })})
	var (
		wait     bool
		prepared *Event
		lateCtx  context.Context
		frame    *Frame
	)
	rt.MustRegister(Tool{Name: "fetch", Access: Read, Reentrancy: Reentrant, Func: func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
		w, ok := ctx.(mcpwire.WaitingContext)
		if !ok {
			t.Fatal("a tool's context is not an mcpwire.WaitingContext")
		}
		frame, _ = FrameFrom(ctx)
		lateCtx = ctx
		if wait {
			w.Waiting()
			prepared = frame.pre.Load()
			w.Waiting() // a second wait (a retry, the session's new id) makes none
			if p := frame.pre.Load(); p != prepared {
				t.Error("a second Waiting made the event again")
			}
		}
		return json.RawMessage(`{"ok":true}`), nil
	}})
	args := json.RawMessage(`{"url":"https://example.test/?key=` + secret + `"}`)
	ctx, req, err := rt.Begin(context.Background(), &RequestOptions{Principal: "alice", Agent: "planner"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()

	call := func(id string, w bool) *Event {
		t.Helper()
		wait, prepared, events = w, nil, nil
		if res := rt.Call(ctx, &Call{ID: id, Tool: "fetch", Arguments: args}); res.Status != StatusSuccess {
			t.Fatalf("call %s: %+v", id, res.Error)
		}
		if len(events) != 1 {
			t.Fatalf("call %s: %d events recorded, want 1", id, len(events))
		}
		return events[0]
	}
	plain := call("c1", false)
	waited := call("c2", true)
	if prepared == nil || prepared == eventTaken {
		t.Fatal("Waiting prepared no event")
	}
	if waited != prepared {
		t.Error("record made a new event instead of the one prepared while the upstream worked")
	}
	if strings.Contains(string(waited.Args), secret) {
		t.Errorf("the prepared event's arguments are not masked: %s", waited.Args)
	}
	// The same call but for its own ids and times.
	norm := func(e *Event) Event {
		c := *e
		var zero Event
		c.Frame, c.CallID, c.Time, c.Started, c.Latency, c.Remaining = zero.Frame, "", zero.Time, zero.Started, 0, zero.Remaining
		return c
	}
	a, b := norm(plain), norm(waited)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("an event prepared while waiting differs from one made after:\n%s\n%s", jb, ja)
	}
	if waited.CallID != "c2" || waited.Frame != frame.ID || waited.State != Completed || len(waited.Result) == 0 {
		t.Errorf("the prepared event lacks what record adds: %+v", waited)
	}

	// Waiting after the frame was recorded (a wire client's late return)
	// makes nothing for the frame to hold.
	lateCtx.(mcpwire.WaitingContext).Waiting()
	if p := frame.pre.Load(); p != eventTaken {
		t.Errorf("Waiting after record left %p on the frame, want none made", p)
	}
}

type recorderOf func(*Event)

func (f recorderOf) Record(_ context.Context, e *Event) { f(e) }

// BenchmarkEventOf is the part of a tool call's record that its upstream
// wait now makes (eventOf: the event, its unchanging fields, the masked
// arguments and names), warm, against the whole record of the same frame.
func BenchmarkEventOf(b *testing.B) {
	red, err := redact.New(&redact.Options{Secrets: []string{"sk-live-0123456789abcdefghijklmnopqrstuv"}})
	if err != nil {
		b.Fatal(err)
	}
	rt := New(&Options{Redactor: red, Recorder: recorderOf(func(*Event) {})})
	var f *Frame
	rt.MustRegister(Tool{Name: "fetch", Access: Read, Reentrancy: Reentrant, Func: func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
		f, _ = FrameFrom(ctx)
		return json.RawMessage(`{"ok":true}`), nil
	}})
	ctx, req, err := rt.Begin(context.Background(), &RequestOptions{Principal: "alice", Agent: "planner"})
	if err != nil {
		b.Fatal(err)
	}
	defer req.End()
	rt.Call(ctx, &Call{ID: "c1", Tool: "fetch", Arguments: json.RawMessage(`{"url":"https://example.test/a","n":3}`)})
	b.Run("eventOf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rt.eventOf(f)
		}
	})
	b.Run("record", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f.pre.Store(nil)
			rt.record(context.Background(), f)
		}
	})
}
