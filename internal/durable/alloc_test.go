package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// keptRows is a store that keeps nothing of a write call but the last
// rows it was given, and answers every claim as free: what a write call
// allocates above the store (the runtime, the checkpoints and the
// idempotency records), without a store's own allocations.
type keptRows struct {
	*store.Memory
	claim, ended *store.Frame
	result       []byte
	claims, ends int
}

func (k *keptRows) ClaimKey(_ context.Context, c *store.IdemRecord) (*store.IdemRecord, bool, error) {
	k.claim = c.Executing
	k.claims++
	return nil, true, nil
}

func (k *keptRows) QueueFrame(f *store.Frame) { k.ended = f; k.ends++ }

func (k *keptRows) QueueCompleteKey(_, _ string, result []byte, _ time.Time) { k.result = result }

// TestWriteCallDurableAllocs: a write call as reach serve runs it (its
// idempotency claim carries its "executing" checkpoint, its end and its
// result are queued) allocates no more above the store than when
// measured, and still hands the store both rows and the result.
func TestWriteCallDurableAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not counted under the race detector")
	}
	st := &keptRows{Memory: store.NewMemory()}
	cp := New(st, nil, nil)
	rt := reach.New(&reach.Options{DefaultBudget: &reach.Budget{}, DisableLoopGuard: true, Checkpoints: cp, DeadLetters: cp,
		Idempotency: store.NewIdempotency(st, &store.IdempotencyOptions{Checkpoint: cp.ExecutingFrame})})
	rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }})
	// A request whose id reach made, as reach serve begins one for a call
	// (a named id's calls give their tool a key of its owner's own: one
	// more allocation).
	ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	const n = 1000
	args := make([]json.RawMessage, n)
	ids := make([]string, n)
	for i := range n {
		args[i] = json.RawMessage(`{"amount":` + strconv.Itoa(i) + `}`)
		ids[i] = "c" + strconv.Itoa(i)
	}
	i := 0
	call := func() {
		res := rt.Call(ctx, &reach.Call{ID: ids[i], Tool: "pay", Arguments: args[i]})
		if res.IsError() {
			t.Fatal(res.ModelText())
		}
		i++
	}
	for range 20 {
		call()
	}
	allocs := testing.AllocsPerRun(200, call)
	t.Logf("a write call allocates %v times above the store", allocs)
	if st.claims != i || st.ends != i {
		t.Fatalf("%d calls made %d claims and %d ends", i, st.claims, st.ends)
	}
	if st.claim == nil || st.claim.State != "executing" || st.ended.State != "completed" || st.ended.Frame != st.claim.Frame ||
		string(st.ended.Args) != string(args[i-1]) || string(st.claim.Args) != string(args[i-1]) {
		t.Errorf("the last call's rows: executing %+v, ended %+v", st.claim, st.ended)
	}
	var rec struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(st.result, &rec); err != nil || rec.Status != "success" || string(rec.Data) != string(args[i-1]) {
		t.Errorf("the last call's recorded result: %s (%v)", st.result, err)
	}
	// 17 when measured, one of them the key its tool is given, digested
	// with its owner (16 when the tool was given the derived key as it was;
	// 18 with its result encoded by json.Marshal; 26
	// with its claim subscribed to the key's news before it found the key
	// held, the claim's frame id, the end's and its row each spelled anew,
	// the claim, the checkpoints and the rows each an allocation of their
	// own).
	if allocs > 17 {
		t.Errorf("a write call allocates %v times above the store, want at most 17", allocs)
	}
}

// TestEndedRowOfExecuting: the end's row, made of the "executing" one's,
// names the call's frame and its parent, its state, error and undo as
// the end's record says, and the arguments as stored (masked), whether
// the claim wrote the "executing" row or the checkpointer did.
func TestEndedRowOfExecuting(t *testing.T) {
	for _, claim := range []bool{true, false} {
		t.Run(fmt.Sprint("claim=", claim), func(t *testing.T) {
			st := store.NewMemory()
			cp := New(st, newRedactor(t).Redact, nil)
			o := &reach.Options{DefaultBudget: &reach.Budget{}, DisableLoopGuard: true, Checkpoints: cp, DeadLetters: cp}
			if claim {
				o.Idempotency = store.NewIdempotency(st, &store.IdempotencyOptions{Checkpoint: cp.ExecutingFrame})
			}
			rt := reach.New(o)
			rt.MustRegister(reach.Tool{Name: "refund", Access: reach.Write, Reentrancy: reach.Reentrant,
				Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }})
			rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant,
				Undo: &reach.Followup{Tool: "refund", Args: `{"order":"{args.order}"}`},
				Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					return json.RawMessage(`{"ok":true}`), nil
				}})
			rt.MustRegister(reach.Tool{Name: "fail", Access: reach.Write, Reentrancy: reach.Reentrant,
				Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					return nil, &reach.ToolError{Type: "invalid", Message: "no"}
				}})
			rt.MustRegister(reach.Tool{Name: "order", Access: reach.Write, Reentrancy: reach.Reentrant,
				Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
					rt.Call(ctx, &reach.Call{ID: "p", Tool: "pay", Arguments: args})
					rt.Call(ctx, &reach.Call{ID: "f", Tool: "fail", Arguments: args})
					return json.RawMessage(`{}`), nil
				}})
			ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			defer req.End()
			if res := rt.Call(ctx, &reach.Call{ID: "o", Tool: "order", Arguments: json.RawMessage(secretArgs)}); res.IsError() {
				t.Fatal(res.ModelText())
			}
			rows, err := st.RequestFrames(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]*store.Frame{}
			for _, f := range rows {
				got[f.Frame] = f
			}
			want := newRedactor(t).Redact(json.RawMessage(secretArgs))
			n := 0
			for _, f := range req.Frames() {
				if f.Kind != reach.ToolFrame {
					continue
				}
				n++
				row := got[f.ID.String()]
				if row == nil {
					t.Errorf("no row for %s (%s)", f.Name, f.ID)
					continue
				}
				parent := ""
				if f.Parent != nil {
					parent = f.Parent.ID.String()
				}
				if row.Parent != parent || row.Name != f.Name || row.CallID != f.CallID || row.State != f.State().String() ||
					string(row.Args) != string(want) || row.IdemKey == "" {
					t.Errorf("the row of %s: %+v; want parent %q, state %s, arguments %s", f.Name, row, parent, f.State(), want)
				}
				if (len(row.Undo) > 0) != (f.Name == "pay") || (len(row.Error) > 0) != (f.Name == "fail") {
					t.Errorf("the row of %s: undo %s, error %s", f.Name, row.Undo, row.Error)
				}
			}
			if n != 3 || len(rows) != 3 {
				t.Errorf("%d tool frames, %d rows; want 3 each", n, len(rows))
			}
		})
	}
}
