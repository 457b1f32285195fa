package reach_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
)

// An idempotency key reused for other (normalized) arguments is refused:
// replaying the first call's result would answer a call that never ran.
// The same arguments, however written, get the recorded result.
func TestIdempotencyKeyReused(t *testing.T) {
	rt := reach.New(nil)
	var runs atomic.Int32
	rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return args, nil
		}})
	ctx, _ := begin(t, rt, &reach.RequestOptions{ID: "r1"})
	for _, tt := range []struct {
		name      string
		call      reach.Call
		code      string // "" for a success
		replayed  bool
		inMessage string
	}{
		{"first", reach.Call{ID: "c1", Tool: "pay", IdempotencyKey: "k", Arguments: json.RawMessage(`{"amount":10,"to":"bob"}`)}, "", false, ""},
		{"same, written otherwise", reach.Call{ID: "c2", Tool: "pay", IdempotencyKey: "k", Arguments: json.RawMessage(`{ "to":"bob", "amount":10 }`)}, "", true, ""},
		{"other arguments", reach.Call{ID: "c3", Tool: "pay", IdempotencyKey: "k", Arguments: json.RawMessage(`{"amount":1000,"to":"bob"}`)},
			"idempotency_key_reused", false, `idempotency key "k"`},
		{"a call id reused", reach.Call{ID: "c1", Tool: "pay", Arguments: json.RawMessage(`{"amount":5,"to":"eve"}`)}, "", false, ""},
		{"a call id reused for other arguments", reach.Call{ID: "c1", Tool: "pay", Arguments: json.RawMessage(`{"amount":6,"to":"eve"}`)},
			"idempotency_key_reused", false, `Call id "c1"`},
	} {
		res := rt.Call(ctx, &tt.call)
		switch {
		case tt.code == "" && (res.Status != reach.StatusSuccess || res.Replayed != tt.replayed):
			t.Errorf("%s: %s (replayed %v) %v; want success, replayed %v", tt.name, res.Status, res.Replayed, res.Error, tt.replayed)
		case tt.code != "" && (res.Status != reach.StatusRefused || res.Error.Code != tt.code ||
			!strings.Contains(res.Error.Message, tt.inMessage) || res.Error.Suggestion == ""):
			t.Errorf("%s: %s %+v; want refused %s naming %s, with a suggestion", tt.name, res.Status, res.Error, tt.code, tt.inMessage)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("pay ran %d times, want 2", n)
	}
}
