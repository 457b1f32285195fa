package audit_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// TestEventNamesPriority (R8): the events of a request whose priority is
// not the default, 0, name it ("priority", last, as the log stores it);
// (its calls' and its stop's); a request of priority 0 has events
// encoded as before; the log verifies.
func TestEventNamesPriority(t *testing.T) {
	ctx := t.Context()
	st := store.NewMemory()
	l := newLog(t, st, nil)
	rt := reach.New(&reach.Options{Recorder: l})
	rt.MustRegister(reach.Tool{Name: "lookup", Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"found":true}`), nil
	}})
	for id, p := range map[string]int{"urgent": 2, "bulk": -1, "plain": 0} {
		rctx, req, err := rt.Begin(ctx, &reach.RequestOptions{ID: id, Principal: "alice", Priority: p})
		if err != nil {
			t.Fatal(err)
		}
		rt.Call(rctx, &reach.Call{ID: "c1", Tool: "lookup", Arguments: json.RawMessage(`{}`)})
		if id == "urgent" {
			mode, _ := reach.ParseStopMode("cancel")
			req.Stop(mode, "test", "enough") // a stop's event too
		}
		req.End()
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	kinds := ""
	for id, want := range map[string]string{"urgent": `,"priority":2}`, "bulk": `,"priority":-1}`, "plain": ""} {
		evs, err := l.Show(ctx, id)
		if err != nil || len(evs) == 0 {
			t.Fatalf("%s: %d events, %v", id, len(evs), err)
		}
		for _, e := range evs {
			if id == "urgent" {
				kinds += e.Kind + " "
			}
			data, _ := e.MarshalJSON()
			got := string(data)
			if want == "" && strings.Contains(got, "priority") || want != "" && !strings.HasSuffix(got, want) {
				t.Errorf("%s's %s event: %s, want it to end %q", id, e.Kind, got, cmpOr(want, `} (no priority)`))
			}
			if e.Priority != map[string]int{"urgent": 2, "bulk": -1}[id] {
				t.Errorf("%s's %s event read back: priority %d", id, e.Kind, e.Priority)
			}
		}
	}
	if kinds != "tool stop " {
		t.Errorf("urgent's events: %s, want a tool call's and a stop's", kinds)
	}
	if _, err := l.Verify(ctx); err != nil {
		t.Error(err)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
