package reach

import (
	"context"
	"encoding/json"
	"testing"
)

type panickyApprover struct{}

func (panickyApprover) Approve(context.Context, *Call) (Decision, *Error) {
	panic("the approval store is broken")
}

// An approver that panics (recovered above the runtime, as net/http
// recovers a handler's panic) leaves no wait kept for the request: the
// table of waits held the request and its cancel for ever.
func TestApprovalWaitLetGoOnPanic(t *testing.T) {
	rt := New(&Options{Approver: panickyApprover{}})
	rt.MustRegister(Tool{Name: "delete_all", Access: HighRisk, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`"deleted"`), nil
	}})
	ctx, req, err := rt.Begin(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the approver's panic did not reach the caller")
			}
		}()
		rt.Call(ctx, &Call{ID: "c1", Tool: "delete_all", Arguments: json.RawMessage(`{}`)})
	}()
	rt.awaiting.mu.Lock()
	n := len(rt.awaiting.by)
	rt.awaiting.mu.Unlock()
	if n != 0 {
		t.Errorf("%d requests' approval waits kept after the approver panicked, want none", n)
	}
}
