package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/store"
)

// secretArgs are a write's arguments that hold a secret under a secret's
// name and a registered value in a text.
const secretArgs = `{"note":"key sk-fx-SECRETVALUE-1234567890","order":"42","password":"hunter2hunter2"}` // canonical: as the runtime passes them on

// maskedRig is a runtime whose write "pay" is checkpointed by
// Checkpoints over st, a memory store, which mask arguments with mask;
// with claim, as reach serve runs it, the write's idempotency claim writes
// its "executing" checkpoint. undo makes pay register an undo (its end is
// written at once, not queued). pay calls ran, if not nil, as it runs.
func maskedRig(t testing.TB, st *store.Memory, mask func([]byte) []byte, claim, undo bool, ran func(ctx context.Context)) (*reach.Runtime, context.Context) {
	t.Helper()
	cp := New(st, mask, nil)
	o := &reach.Options{DefaultBudget: &reach.Budget{}, DisableLoopGuard: true, Checkpoints: cp, DeadLetters: cp}
	if claim {
		o.Idempotency = store.NewIdempotency(st, &store.IdempotencyOptions{Checkpoint: cp.ExecutingFrame})
	}
	rt := reach.New(o)
	pay := reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant,
		Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			if ran != nil {
				ran(ctx)
			}
			return json.RawMessage(`{"ok":true}`), nil
		}}
	if undo {
		pay.Undo = &reach.Followup{Tool: "refund", Args: `{"order":"{args.order}"}`}
		rt.MustRegister(reach.Tool{Name: "refund", Access: reach.Write, Reentrancy: reach.Reentrant,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }})
	}
	rt.MustRegister(pay)
	ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(req.End)
	return rt, ctx
}

func newRedactor(t testing.TB) *redact.Redactor {
	t.Helper()
	red, err := redact.New(&redact.Options{Secrets: []string{"sk-fx-SECRETVALUE-1234567890"}})
	if err != nil {
		t.Fatal(err)
	}
	return red
}

// TestArgumentsMaskedOnce: a write's arguments are masked once for both
// of its checkpoints, "executing" and its end, whether the checkpoint is
// written on its own or with the idempotency claim and whether the end is
// queued or written at once; neither stored row holds a secret.
func TestArgumentsMaskedOnce(t *testing.T) {
	red := newRedactor(t)
	want := string(red.Redact([]byte(secretArgs)))
	if strings.Contains(want, "hunter2") || strings.Contains(want, "SECRETVALUE") {
		t.Fatalf("the redactor leaves a secret: %s", want)
	}
	for _, claim := range []bool{false, true} {
		for _, undo := range []bool{false, true} {
			t.Run(fmt.Sprintf("claim=%t,undo=%t", claim, undo), func(t *testing.T) {
				var masked atomic.Int64
				st := store.NewMemory()
				var executing []string // the rows stored while pay runs
				rt, ctx := maskedRig(t, st, func(b []byte) []byte { masked.Add(1); return red.Redact(b) }, claim, undo, func(ctx context.Context) {
					fs, _ := st.RequestFrames(ctx, "r")
					for _, f := range fs {
						if f.State == "executing" {
							executing = append(executing, string(f.Args))
						}
					}
				})
				const calls = 3
				for i := range calls {
					res := rt.Call(ctx, &reach.Call{ID: fmt.Sprint("c", i), Tool: "pay", Arguments: json.RawMessage(secretArgs)})
					if res.Status != reach.StatusSuccess {
						t.Fatalf("call %d: %+v", i, res.Error)
					}
				}
				if len(executing) != calls {
					t.Fatalf("%d calls ran with %d rows executing, want one each", calls, len(executing))
				}
				for _, a := range executing {
					if a != want {
						t.Errorf("an executing checkpoint stored arguments %s, want %s", a, want)
					}
				}
				if n := masked.Load(); n != calls {
					t.Errorf("%d calls masked their arguments %d times, want once each", calls, n)
				}
				fs, err := st.RequestFrames(ctx, "r")
				if err != nil {
					t.Fatal(err)
				}
				if len(fs) != calls {
					t.Fatalf("%d checkpoints stored, want %d", len(fs), calls)
				}
				for _, f := range fs {
					if f.State != "completed" || string(f.Args) != want {
						t.Errorf("checkpoint %s stored %s with arguments %s, want completed with %s", f.Frame, f.State, f.Args, want)
					}
				}
			})
		}
	}
}

// TestArgumentsMaskedOnceAllocs: what masking costs a write call, with
// both checkpoints written, is the allocations of one mask of its
// arguments.
func TestArgumentsMaskedOnceAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not counted under the race detector")
	}
	red := newRedactor(t)
	args := json.RawMessage(secretArgs)
	once := testing.AllocsPerRun(100, func() { red.Redact(args) })
	if once == 0 {
		t.Fatal("masking the arguments allocates nothing: the test checks nothing")
	}
	perCall := func(mask func([]byte) []byte) float64 {
		rt, ctx := maskedRig(t, store.NewMemory(), mask, true, false, nil)
		var i int
		return testing.AllocsPerRun(500, func() {
			i++
			rt.Call(ctx, &reach.Call{ID: fmt.Sprint("c", i), Tool: "pay", Arguments: args})
		})
	}
	plain, masked := perCall(nil), perCall(red.Redact)
	t.Logf("allocations per call: %v unmasked, %v masked; one mask: %v", plain, masked, once)
	if masked-plain > once {
		t.Errorf("a write call allocates %v times with its arguments masked, %v without: %v more, want at most %v (one mask)",
			masked, plain, masked-plain, once)
	}
}
