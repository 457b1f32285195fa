package reach_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// On a shared counter (two runtimes on one store, as the instances of a
// gateway on PostgreSQL), a step no admission debited sets the shared
// count back, not only the runtime's own: seven refusals, then a hand-off
// let through, or a call answered from its idempotency record, on one
// runtime, and the other runtime's next refusals count from zero: its
// eighth stops the request, not its first.
func TestRefusedInARowSharedReset(t *testing.T) {
	for _, step := range []string{"hand-off", "replay"} {
		t.Run(step, func(t *testing.T) {
			st := store.NewMemory()
			var rts [2]*reach.Runtime
			var ctxs [2]context.Context
			var reqs [2]*reach.Request
			var ran *int
			for i := range rts {
				var r *int
				rts[i], r = streakRuntime(t, &reach.Options{RefusalCounter: st, RefusalsShared: true})
				if i == 0 {
					ran = r
				}
				ctxs[i], reqs[i] = begin(t, rts[i], &reach.RequestOptions{ID: "shared-reset-" + step, Principal: "alice", Agent: "planner"})
			}
			lookup := func() *reach.Result {
				return rts[0].Call(ctxs[0], &reach.Call{ID: "l", Tool: "lookup", Arguments: json.RawMessage(`{"q":"a"}`), IdempotencyKey: "k-" + step})
			}
			if step == "replay" {
				if res := lookup(); res.Status != reach.StatusSuccess {
					t.Fatalf("the first lookup: %+v", res)
				}
			}
			for n := 1; n <= 7; n++ {
				if res := call(rts[0], ctxs[0], "wipe", `{}`); res.Status != reach.StatusRefused {
					t.Fatalf("refusal %d: %+v", n, res)
				}
			}
			switch step {
			case "hand-off":
				_, sub, err := rts[0].Delegate(ctxs[0], &reach.Delegation{Agent: "executor", Task: "plan it"})
				if err != nil {
					t.Fatal(err)
				}
				sub.End()
			case "replay":
				before := *ran
				if res := lookup(); res.Status != reach.StatusSuccess || *ran != before {
					t.Fatalf("the lookup again: %+v, ran %d times (want answered from its record)", res, *ran-before)
				}
			}
			for n := 1; n <= 8; n++ {
				call(rts[1], ctxs[1], "wipe", `{}`)
				if stopped, want := reqs[1].StopCause() != nil, n == 8; stopped != want {
					t.Fatalf("after %d refusals on the other runtime since the %s, stopped %v, want %v", n, step, stopped, want)
				}
			}
		})
	}
}
