package reach_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// TestNotSentIsTheRefusal: a tool whose call was held back before it was
// sent (a gateway instance's lease checked again at the wire, its message
// "... Try again in a moment.") answers with that refusal, once: the read
// is not retried (each retry waited for the lease again, up to a TTL) and
// the refusal is not turned into the tool's failure (tool_error), which
// the breakers counted against an upstream that never saw the call.
func TestNotSentIsTheRefusal(t *testing.T) {
	held := &reach.Error{Guard: "admit", Type: reach.TypeTransient, Code: "store_unavailable",
		Message:    "Gateway instance a could not renew its heartbeat on the shared store in time. Nothing ran.",
		Suggestion: "Try again in a moment."}
	var runs atomic.Int32
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "get_quote", Reentrancy: reach.Reentrant,
		Retry: &reach.RetryPolicy{Attempts: 3, Base: time.Millisecond},
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return nil, &reach.NotSentError{Err: held}
		}})
	res := retryTurns(t, rt, "get_quote", 1)[0]
	if n := runs.Load(); n != 1 {
		t.Errorf("a call held back before it was sent was tried %d times; want 1", n)
	}
	if res.Error == nil || res.Error.Code != "store_unavailable" {
		t.Fatalf("the held-back call's answer: %+v; want the refusal, store_unavailable", res.Error)
	}
}
