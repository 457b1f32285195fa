package reach_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
)

// ledger is a fake system of record that logs every side effect.
type ledger struct {
	mu      sync.Mutex
	log     []string
	failing map[string]bool // tools that fail
}

func (l *ledger) note(s string) {
	l.mu.Lock()
	l.log = append(l.log, s)
	l.mu.Unlock()
}

// String is the side effects so far, in order, separated by commas.
func (l *ledger) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.log, ", ")
}

func (l *ledger) tool(name string, f func(args map[string]any) (any, error)) reach.ToolFunc {
	return func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var args map[string]any
		json.Unmarshal(raw, &args)
		l.mu.Lock()
		fail := l.failing[name]
		l.mu.Unlock()
		if fail {
			l.note("FAIL " + name)
			return nil, &reach.ToolError{Type: "conflict", Message: name + " refused by the system of record"}
		}
		out, err := f(args)
		if err != nil {
			return nil, err
		}
		l.note(fmt.Sprintf("%s %v", name, args["id"]))
		return json.Marshal(out)
	}
}

// Seed 001, pattern 1: a failed step after two successful writes compensates
// both, newest first; an undo that fails is dead-lettered, then retried by an
// operator.
func TestSagaCompensatesInReverse(t *testing.T) {
	l := &ledger{failing: map[string]bool{}}
	ok := func(args map[string]any) (any, error) {
		return map[string]any{"ref": "R-" + fmt.Sprint(args["id"])}, nil
	}
	rt := reach.New(nil)
	rt.MustRegister(
		reach.Tool{Name: "book_flight", Access: reach.Write, Reentrancy: reach.Reentrant, Func: l.tool("book_flight", ok),
			Undo: &reach.Followup{Tool: "cancel_flight", Args: `{"id": "{args.id}", "ref": "{result.ref}"}`}},
		reach.Tool{Name: "book_hotel", Access: reach.Write, Reentrancy: reach.Reentrant, Func: l.tool("book_hotel", ok),
			Undo: &reach.Followup{Tool: "cancel_hotel", Args: `{"id": "{args.id}", "ref": "{result.ref}"}`}},
		reach.Tool{Name: "charge_card", Access: reach.Write, Func: l.tool("charge_card", ok)},
		reach.Tool{Name: "cancel_flight", Access: reach.Write, Func: l.tool("cancel_flight", ok)},
		reach.Tool{Name: "cancel_hotel", Access: reach.Write, Func: l.tool("cancel_hotel", ok)},
	)
	l.failing["charge_card"] = true
	l.failing["cancel_hotel"] = true
	ctx, _ := begin(t, rt, nil)
	for i, tool := range []string{"book_flight", "book_hotel"} {
		if res := rt.Call(ctx, &reach.Call{ID: fmt.Sprint(i), Tool: tool, Arguments: json.RawMessage(`{"id": 7}`)}); res.IsError() {
			t.Fatal(res.ModelText())
		}
	}
	res := rt.Call(ctx, &reach.Call{ID: "pay", Tool: "charge_card", Arguments: json.RawMessage(`{"id": 7}`)})
	if res.Status != reach.StatusError {
		t.Fatalf("charge = %s", res.Status)
	}
	want := []string{"book_flight 7", "book_hotel 7", "FAIL charge_card", "FAIL cancel_hotel", "cancel_flight 7"}
	if got := strings.Join(l.log, ", "); got != strings.Join(want, ", ") {
		t.Fatalf("side effects:\n got %s\nwant %s", got, strings.Join(want, ", "))
	}
	if n := res.Notes; len(n) == 0 || !strings.Contains(n[len(n)-1], "cancel_hotel (undoing book_hotel") || !strings.Contains(n[len(n)-1], "dead letter") {
		t.Errorf("notes = %v, want the compensation reported to the model", n)
	}
	dls := queued(t, rt)
	if len(dls) != 1 || dls[0].Tool != "cancel_hotel" || string(dls[0].Args) != `{"id":7,"ref":"R-7"}` {
		t.Fatalf("dead letters = %+v", dls)
	}
	// The operator fixes the hotel system and retries: it runs once, and leaves the queue.
	l.mu.Lock()
	l.failing["cancel_hotel"] = false
	l.mu.Unlock()
	if res, _, err := rt.RetryDeadLetter(t.Context(), dls[0].ID, "ops"); err != nil || res.IsError() {
		t.Fatalf("retry: %v %+v", err, res)
	}
	if len(queued(t, rt)) != 0 || l.log[len(l.log)-1] != "cancel_hotel 7" {
		t.Fatalf("after retry: queue %v, log %v", queued(t, rt), l.log)
	}
	if _, err := rt.DismissDeadLetter(t.Context(), dls[0].ID, "ops", "done"); err == nil {
		t.Error("dismissed a dead letter that is gone")
	}
}

// Seed 001, pattern 2: a write that answers 200 OK but did nothing is caught
// by its verify check, fails, and is compensated.
func TestVerifyAfterWrite(t *testing.T) {
	l := &ledger{failing: map[string]bool{}}
	status := "pending" // the payment link never became active
	rt := reach.New(nil)
	rt.MustRegister(
		reach.Tool{Name: "create_payment_link", Access: reach.Write, Func: l.tool("create_payment_link", func(map[string]any) (any, error) {
			return map[string]any{"link_id": "L1", "ok": true}, nil
		}),
			Undo:   &reach.Followup{Tool: "delete_payment_link", Args: `{"id": "{result.link_id}"}`},
			Verify: &reach.Verify{Followup: reach.Followup{Tool: "get_payment_link", Args: `{"id": "{result.link_id}"}`}, Condition: `result.status == "active"`}},
		reach.Tool{Name: "get_payment_link", Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			return json.Marshal(map[string]any{"id": "L1", "status": status})
		}},
		reach.Tool{Name: "delete_payment_link", Access: reach.Write, Func: l.tool("delete_payment_link", func(map[string]any) (any, error) { return "deleted", nil })},
	)
	ctx, _ := begin(t, rt, nil)
	res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "create_payment_link", Arguments: json.RawMessage(`{"amount": 20}`)})
	if res.Status != reach.StatusError || res.Error.Code != "verify_failed" || !strings.Contains(res.Error.Message, "silent failure") {
		t.Fatalf("result = %s %+v", res.Status, res.Error)
	}
	if got := strings.Join(l.log, ", "); got != "create_payment_link <nil>, delete_payment_link L1" {
		t.Errorf("side effects = %s", got)
	}
	status = "active"
	res = rt.Call(ctx, &reach.Call{ID: "c2", Tool: "create_payment_link", Arguments: json.RawMessage(`{"amount": 21}`)})
	if res.IsError() {
		t.Fatalf("verified write failed: %s", res.ModelText())
	}
	if err := rt.Register(reach.Tool{Name: "bad", Func: echo, Verify: &reach.Verify{Followup: reach.Followup{Tool: "x"}, Condition: "result.status =="}}); err == nil {
		t.Error("a broken CEL condition was accepted")
	}
}

// Seed 001, pattern 4: read a balance of 100; another request deducts 50;
// this request's deduction of 80, based on its stale read, is refused with
// "read it again"; after a re-read it goes through.
func TestStaleReadRefused(t *testing.T) {
	var mu sync.Mutex
	balance := 100
	rt := reach.New(nil)
	rt.MustRegister(
		reach.Tool{Name: "get_balance", Reentrancy: reach.Reentrant, Reads: []string{"account:{account}"}, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			defer mu.Unlock()
			return json.Marshal(map[string]int{"balance": balance})
		}},
		reach.Tool{Name: "deduct", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"account:{account}"}, Func: func(_ context.Context, raw json.RawMessage) (json.RawMessage, error) {
			var a struct{ Amount int }
			json.Unmarshal(raw, &a)
			mu.Lock()
			defer mu.Unlock()
			balance -= a.Amount
			return json.Marshal(map[string]int{"balance": balance})
		}},
	)
	actx, _ := begin(t, rt, nil)
	bctx, _ := begin(t, rt, nil)
	if res := call(rt, actx, "get_balance", `{"account":"A-1"}`); string(res.Data) != `{"balance":100}` {
		t.Fatal(res.ModelText())
	}
	if res := rt.Call(bctx, &reach.Call{ID: "b1", Tool: "deduct", Arguments: json.RawMessage(`{"account":"A-1","amount":50}`)}); res.IsError() {
		t.Fatal(res.ModelText())
	}
	res := rt.Call(actx, &reach.Call{ID: "a1", Tool: "deduct", Arguments: json.RawMessage(`{"account":"A-1","amount":80}`)})
	if res.Status != reach.StatusRefused || res.Error.Code != "stale_read" {
		t.Fatalf("stale deduction: %+v", res)
	}
	if want := "Account A-1 changed since you read it (v0 -> v1)."; res.Error.Message != want || !strings.Contains(res.ModelText(), "Read it again") {
		t.Errorf("message = %q, want %q", res.Error.Message, want)
	}
	if balance != 50 {
		t.Fatalf("balance = %d: the stale write ran", balance)
	}
	// Another account is not affected, and after a re-read the write passes.
	call(rt, actx, "get_balance", `{"account":"A-1","fresh":true}`)
	if res := rt.Call(actx, &reach.Call{ID: "a2", Tool: "deduct", Arguments: json.RawMessage(`{"account":"A-1","amount":30}`)}); res.IsError() {
		t.Fatalf("write after re-read: %s", res.ModelText())
	}
}

// With Refresh, reach re-reads the entity before the write instead of
// refusing, and records the state it found.
func TestRefreshBeforeWrite(t *testing.T) {
	var reads atomic.Int32
	rt := reach.New(nil)
	rt.MustRegister(
		reach.Tool{Name: "get_order", Reentrancy: reach.Reentrant, Reads: []string{"order:{id}"}, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			reads.Add(1)
			return json.RawMessage(`{"status":"PAID"}`), nil
		}},
		reach.Tool{Name: "update_order", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"},
			Refresh: &reach.Followup{Tool: "get_order", Args: `{"id": "{args.id}"}`}, Func: echo},
	)
	actx, _ := begin(t, rt, nil)
	bctx, _ := begin(t, rt, nil)
	call(rt, actx, "get_order", `{"id":"O1"}`)
	rt.Call(bctx, &reach.Call{ID: "b", Tool: "update_order", Arguments: json.RawMessage(`{"id":"O1","note":"b"}`)})
	res := rt.Call(actx, &reach.Call{ID: "a", Tool: "update_order", Arguments: json.RawMessage(`{"id":"O1","note":"a"}`)})
	if res.IsError() || reads.Load() != 2 {
		t.Fatalf("refresh: %s after %d reads", res.ModelText(), reads.Load())
	}
	if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], `read it again before writing: {"status":"PAID"}`) {
		t.Errorf("notes = %v", res.Notes)
	}
}

// Writes to one entity are serialized; two requests that each hold one
// entity and wait for the other's get a deadlock error instead of hanging.
func TestEntityDeadlock(t *testing.T) {
	rt := reach.New(nil)
	inA, inB := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var nested reach.ToolFunc = func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var a struct{ From, To string }
		json.Unmarshal(raw, &a)
		if a.To == "" {
			return json.RawMessage(`"ok"`), nil
		}
		if a.From == "x" {
			close(inA)
			<-inB
		} else {
			close(inB)
			<-inA
		}
		// Each now writes the other's entity from inside its own write.
		res := rt.Call(ctx, &reach.Call{ID: "inner-" + a.From, Tool: "transfer", Arguments: json.RawMessage(fmt.Sprintf(`{"from":%q}`, a.To))})
		once.Do(func() {})
		if res.IsError() {
			return nil, res.Err()
		}
		return res.Data, nil
	}
	rt.MustRegister(reach.Tool{Name: "transfer", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"account:{from}"}, Func: nested, Timeout: time.Minute})
	actx, _ := begin(t, rt, nil)
	bctx, _ := begin(t, rt, nil)
	results := make([]*reach.Result, 2)
	var wg sync.WaitGroup
	wg.Go(func() {
		results[0] = rt.Call(actx, &reach.Call{ID: "a", Tool: "transfer", Arguments: json.RawMessage(`{"from":"x","to":"y"}`)})
	})
	wg.Go(func() {
		results[1] = rt.Call(bctx, &reach.Call{ID: "b", Tool: "transfer", Arguments: json.RawMessage(`{"from":"y","to":"x"}`)})
	})
	wg.Wait()
	deadlocks, oks := 0, 0
	for _, r := range results {
		if r.IsError() && strings.Contains(r.ModelText(), "deadlock") {
			deadlocks++
		}
		if !r.IsError() {
			oks++
		}
	}
	if deadlocks != 1 || oks != 1 {
		t.Fatalf("results: %s | %s; want one deadlock and one success", results[0].ModelText(), results[1].ModelText())
	}
}

// Cancelling a request runs its compensations.
func TestCancelCompensates(t *testing.T) {
	l := &ledger{failing: map[string]bool{}}
	rt := reach.New(nil)
	rt.MustRegister(
		reach.Tool{Name: "reserve", Access: reach.Write, Func: l.tool("reserve", func(map[string]any) (any, error) { return "r", nil }),
			Undo: &reach.Followup{Tool: "release", Args: `{"id": "{args.id}"}`}},
		reach.Tool{Name: "release", Access: reach.Write, Func: l.tool("release", func(map[string]any) (any, error) { return "ok", nil })},
	)
	ctx, req := begin(t, rt, nil)
	rt.Call(ctx, &reach.Call{ID: "r", Tool: "reserve", Arguments: json.RawMessage(`{"id":"seat-4"}`)})
	req.Stop(reach.Cancel, "user", "changed my mind")
	for range 10000 { // the compensation runs in the background: wait for it, up to ~10 s
		l.mu.Lock()
		n := len(l.log)
		l.mu.Unlock()
		if n == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if got := strings.Join(l.log, ", "); got != "reserve seat-4, release seat-4" {
		t.Fatalf("side effects = %s", got)
	}
}

type replacer struct{ secret string }

func (r replacer) Redact(b []byte) []byte {
	return []byte(strings.ReplaceAll(string(b), r.secret, "[REDACTED]"))
}
func (r replacer) RedactString(s string) string { return strings.ReplaceAll(s, r.secret, "[REDACTED]") }

type memRecorder struct {
	mu     sync.Mutex
	events []*reach.Event
}

func (m *memRecorder) Record(_ context.Context, e *reach.Event) {
	m.mu.Lock()
	m.events = append(m.events, e)
	m.mu.Unlock()
}

// A secret a tool leaks in its result or error never reaches the model,
// the frame, or the recorder.
func TestRedaction(t *testing.T) {
	const secret = "sk-live-0123456789"
	rec := &memRecorder{}
	rt := reach.New(&reach.Options{Redactor: replacer{secret}, Recorder: rec})
	rt.MustRegister(
		reach.Tool{Name: "leaky", Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"auth":"Bearer ` + secret + `"}`), nil
		}},
		reach.Tool{Name: "leaky_error", Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, fmt.Errorf("upstream rejected key %s", secret)
		}},
	)
	ctx, req := begin(t, rt, nil)
	var seen []string
	for _, tool := range []string{"leaky", "leaky_error"} {
		res := rt.Call(ctx, &reach.Call{ID: tool, Tool: tool, Arguments: json.RawMessage(`{"q":"x"}`)})
		seen = append(seen, res.ModelText(), res.Summary)
	}
	for _, f := range req.Frames() {
		seen = append(seen, string(f.Result()), f.Summary())
		if e := f.Err(); e != nil {
			seen = append(seen, e.ModelText())
		}
	}
	rec.mu.Lock()
	for _, e := range rec.events {
		b, _ := json.Marshal(e)
		seen = append(seen, string(b))
	}
	rec.mu.Unlock()
	for _, s := range seen {
		if strings.Contains(s, secret) {
			t.Errorf("secret leaked: %s", s)
		}
	}
	if !strings.Contains(strings.Join(seen, " "), "[REDACTED]") {
		t.Error("nothing was redacted: the test did not exercise the leak")
	}
}

type approverFunc func(ctx context.Context, c *reach.Call) (reach.Decision, *reach.Error)

func (f approverFunc) Approve(ctx context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
	return f(ctx, c)
}

// A high-risk call asks the Approver: pending while it waits, run once
// approved, refused when denied.
func TestApprover(t *testing.T) {
	decision := reach.NeedsApproval
	var asked []string
	rt := reach.New(&reach.Options{Approver: approverFunc(func(_ context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
		asked = append(asked, c.Tool+" "+string(c.Args()))
		if decision == reach.NeedsApproval {
			return decision, &reach.Error{Code: "approval_pending", Message: "refund_order waits for alice and a reviewer.", Suggestion: "Wait, or do something else meanwhile."}
		}
		return decision, nil
	})})
	var runs atomic.Int32
	rt.MustRegister(reach.Tool{Name: "refund_order", Access: reach.HighRisk, Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		runs.Add(1)
		return json.RawMessage(`"refunded"`), nil
	}})
	ctx, req := begin(t, rt, nil)
	res := rt.Call(ctx, &reach.Call{ID: "r1", Tool: "refund_order", Arguments: json.RawMessage(`{"order": 9}`)})
	if res.Status != reach.StatusPending || res.Error.Type != reach.TypeApproval || !strings.Contains(res.ModelText(), "waits for alice") {
		t.Fatalf("pending: %+v", res)
	}
	if f := req.Frames(); f[len(f)-1].State() != reach.AwaitingApproval {
		t.Errorf("frame state = %s, want awaiting_approval", f[len(f)-1].State())
	}
	decision = reach.Permit
	if res := rt.Call(ctx, &reach.Call{ID: "r1", Tool: "refund_order", Arguments: json.RawMessage(`{"order": 9}`)}); res.IsError() || runs.Load() != 1 {
		t.Fatalf("approved: %s, runs %d", res.ModelText(), runs.Load())
	}
	decision = reach.Deny
	if res := rt.Call(ctx, &reach.Call{ID: "r2", Tool: "refund_order", Arguments: json.RawMessage(`{"order": 10}`)}); res.Status != reach.StatusRefused || res.Error.Type != reach.TypePermission {
		t.Fatalf("denied: %+v", res)
	}
	if runs.Load() != 1 || len(asked) != 3 || asked[0] != `refund_order {"order":9}` {
		t.Errorf("runs %d, asked %v", runs.Load(), asked)
	}
}

// An approved call runs once under the approval's key: a retry gets the
// first run's result, a failure included.
func TestApprovedCallRunsOnce(t *testing.T) {
	rt := reach.New(&reach.Options{Approver: approverFunc(func(context.Context, *reach.Call) (reach.Decision, *reach.Error) {
		return reach.Permit, nil
	}), ApprovalKey: func(*reach.Call) string { return "ap-42" }})
	var runs atomic.Int32
	rt.MustRegister(reach.Tool{Name: "wire", Access: reach.HighRisk, Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		runs.Add(1)
		return nil, &reach.ToolError{Type: "conflict", Message: "bank said no"}
	}})
	ctx, _ := begin(t, rt, nil)
	first := rt.Call(ctx, &reach.Call{ID: "w1", Tool: "wire", Arguments: json.RawMessage(`{"amount":5}`)})
	retry := rt.Call(ctx, &reach.Call{ID: "w2", Tool: "wire", Arguments: json.RawMessage(`{"amount":5}`)})
	if first.Status != reach.StatusError || retry.Status != reach.StatusError || !retry.Replayed || runs.Load() != 1 {
		t.Fatalf("first %s, retry %s (replayed %v), runs %d", first.Status, retry.Status, retry.Replayed, runs.Load())
	}
}

type brokenStore struct{}

func (brokenStore) Claim(context.Context, *reach.IdemClaim) (*reach.Result, bool, error) {
	return nil, false, fmt.Errorf("disk I/O error")
}
func (brokenStore) Complete(string, *reach.Result) {}

// A failing idempotency store refuses the write as transient; it never
// crashes or runs the write.
func TestIdempotencyStoreFailure(t *testing.T) {
	rt := reach.New(&reach.Options{Idempotency: brokenStore{}})
	var ran atomic.Bool
	rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		ran.Store(true)
		return json.RawMessage(`1`), nil
	}})
	ctx, _ := begin(t, rt, nil)
	res := rt.Call(ctx, &reach.Call{ID: "p", Tool: "pay", Arguments: json.RawMessage(`{}`)})
	if res.Status != reach.StatusRefused || res.Error.Code != "idempotency_store" || ran.Load() {
		t.Fatalf("result %+v, ran %v", res.Error, ran.Load())
	}
	// Results round-trip through JSON.
	b, _ := json.Marshal(res)
	var back reach.Result
	if err := json.Unmarshal(b, &back); err != nil || back.Frame != res.Frame || back.Error.Code != res.Error.Code {
		t.Fatalf("round trip: %v %+v", err, back)
	}
}

// TestUndoWritesTheEntityItsCallHolds: a write whose check fails is undone
// by an undo that writes the same entity, while the failing call still
// holds it: the undo runs (it writes as the request it undoes) instead of
// waiting for the lock forever, and the entity is free afterwards.
func TestUndoWritesTheEntityItsCallHolds(t *testing.T) {
	rt := reach.New(nil)
	var undone atomic.Int32
	rt.MustRegister(
		reach.Tool{Name: "refund", Access: reach.Write, Writes: []string{"order:{order_id}"}, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"refund_id":"R1","ok":false}`), nil
		},
			Undo:   &reach.Followup{Tool: "cancel_refund", Args: `{"order_id": "{args.order_id}"}`},
			Verify: &reach.Verify{Followup: reach.Followup{Tool: "get_refund", Args: `{}`}, Condition: `result.ok == true`}},
		reach.Tool{Name: "get_refund", Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"ok":false}`), nil
		}},
		reach.Tool{Name: "cancel_refund", Access: reach.Write, Writes: []string{"order:{order_id}"}, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			undone.Add(1)
			return json.RawMessage(`"cancelled"`), nil
		}},
	)
	ctx, _ := begin(t, rt, nil)
	done := make(chan *reach.Result, 1)
	go func() {
		done <- rt.Call(ctx, &reach.Call{ID: "c1", Tool: "refund", Arguments: json.RawMessage(`{"order_id":"O1"}`)})
	}()
	select {
	case res := <-done:
		if res.Status != reach.StatusError || res.Error.Code != "verify_failed" || undone.Load() != 1 {
			t.Errorf("refund = %s %+v, undone %d times; want verify_failed and one undo", res.Status, res.Error, undone.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call hangs: its undo waits for the entity the call holds")
	}
	// The entity is free: another request writes it at once.
	ctx2, _ := begin(t, rt, nil)
	cctx, cancel := context.WithTimeout(ctx2, 5*time.Second)
	defer cancel()
	if res := rt.Call(cctx, &reach.Call{ID: "c2", Tool: "cancel_refund", Arguments: json.RawMessage(`{"order_id":"O1"}`)}); res.IsError() {
		t.Errorf("writing order O1 afterwards: %s", res.ModelText())
	}
}

// TestWriteFinishingAfterCancelIsUndone: a write whose tool ignores the
// cancellation and succeeds after its request was cancelled is undone too,
// not only the writes that finished before the stop.
func TestWriteFinishingAfterCancelIsUndone(t *testing.T) {
	rt := reach.New(nil)
	side := &ledger{}
	note := side.note
	started := make(chan struct{})
	rt.MustRegister(
		reach.Tool{Name: "reserve", Access: reach.Write, Reentrancy: reach.Reentrant, Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			var in struct{ Seat string }
			json.Unmarshal(a, &in)
			if in.Seat == "slow" {
				close(started)
				time.Sleep(200 * time.Millisecond) // ignores the cancellation
			}
			note("reserve " + in.Seat)
			return json.RawMessage(`{"seat":"` + in.Seat + `"}`), nil
		}, Undo: &reach.Followup{Tool: "release", Args: `{"seat": "{result.seat}"}`}},
		reach.Tool{Name: "release", Access: reach.Write, Reentrancy: reach.Reentrant, Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			var in struct{ Seat string }
			json.Unmarshal(a, &in)
			note("release " + in.Seat)
			return json.RawMessage(`"ok"`), nil
		}},
	)
	ctx, req := begin(t, rt, nil)
	rt.Call(ctx, &reach.Call{ID: "c1", Tool: "reserve", Arguments: json.RawMessage(`{"seat":"fast"}`)})
	go func() { <-started; req.Stop(reach.Cancel, "test", "user left") }()
	rt.Call(ctx, &reach.Call{ID: "c2", Tool: "reserve", Arguments: json.RawMessage(`{"seat":"slow"}`)})
	want := map[string]bool{"release fast": true, "release slow": true}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got := map[string]bool{}
		for _, s := range strings.Split(side.String(), ", ") {
			got[s] = true
		}
		if got["release fast"] && got["release slow"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("side effects %s, want both reservations released (%v)", side.String(), want)
		}
	}
}

// TestStopUndoWaitsForInFlightWrite: a stop's compensation does not undo a
// write to an entity while the request's next write to it is still
// running; it waits, and the undos run newest first.
func TestStopUndoWaitsForInFlightWrite(t *testing.T) {
	rt := reach.New(nil)
	side := &ledger{}
	note := side.note
	started := make(chan struct{})
	rt.MustRegister(
		reach.Tool{Name: "set", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"}, Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			var in struct{ ID, V string }
			json.Unmarshal(a, &in)
			if in.V == "slow" {
				close(started)
				note("slow write start")
				time.Sleep(100 * time.Millisecond) // ignores the cancellation
				note("slow write end")
			}
			return json.RawMessage(`{"v":"` + in.V + `"}`), nil
		}, Undo: &reach.Followup{Tool: "unset", Args: `{"id": "{args.id}", "v": "{result.v}"}`}},
		reach.Tool{Name: "unset", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"}, Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			var in struct{ V string }
			json.Unmarshal(a, &in)
			note("undo " + in.V)
			return json.RawMessage(`"ok"`), nil
		}},
	)
	ctx, req := begin(t, rt, nil)
	rt.Call(ctx, &reach.Call{ID: "w1", Tool: "set", Arguments: json.RawMessage(`{"id":"O1","v":"first"}`)})
	go func() { <-started; req.Stop(reach.Cancel, "test", "user left") }()
	rt.Call(ctx, &reach.Call{ID: "w2", Tool: "set", Arguments: json.RawMessage(`{"id":"O1","v":"slow"}`)})
	want := "slow write start, slow write end, undo slow, undo first"
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got := side.String()
		if got == want {
			return
		}
		if time.Now().After(deadline) || strings.Count(got, "undo") >= 2 {
			t.Fatalf("order: %s, want %s", got, want)
		}
	}
}

// TestCompensateFromInsideACall: a tool that undoes its request's earlier
// writes itself (Request.Compensate from inside its call, which holds the
// entity) does not wait for its own lock.
func TestCompensateFromInsideACall(t *testing.T) {
	rt := reach.New(nil)
	var undone atomic.Int32
	rt.MustRegister(
		reach.Tool{Name: "set", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"},
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`"ok"`), nil },
			Undo: &reach.Followup{Tool: "unset", Args: `{"id": "{args.id}"}`}},
		reach.Tool{Name: "unset", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"},
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				undone.Add(1)
				return json.RawMessage(`"ok"`), nil
			}},
		reach.Tool{Name: "finalize", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"},
			Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				req, _ := reach.RequestFrom(ctx)
				req.Compensate(ctx, "the order cannot be finalized")
				return json.RawMessage(`"undone"`), nil
			}},
	)
	ctx, _ := begin(t, rt, nil)
	rt.Call(ctx, &reach.Call{ID: "s", Tool: "set", Arguments: json.RawMessage(`{"id":"O1"}`)})
	done := make(chan *reach.Result, 1)
	go func() {
		done <- rt.Call(ctx, &reach.Call{ID: "f", Tool: "finalize", Arguments: json.RawMessage(`{"id":"O1"}`)})
	}()
	select {
	case res := <-done:
		if res.IsError() || undone.Load() != 1 {
			t.Errorf("finalize = %s, undone %d times", res.ModelText(), undone.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Compensate from inside a call that holds the entity hangs")
	}
}

// TestUndoWaitsForSiblingWrite: when one call of a batch fails, the undo of
// the request's earlier write to an entity waits for another call of the
// batch that is writing that entity right now, instead of sharing the
// request's lock with it; if that call fails too, its own undo runs first
// (newest first), and if its undo needs what the failing call holds, the
// wait is a deadlock, broken with a dead letter instead of a hang.
func TestUndoWaitsForSiblingWrite(t *testing.T) {
	tests := []struct {
		name     string
		sibling  string // the call that writes order O1 while charge fails
		want     string // side effects, in order
		wantDead string // the tool of the dead letter, if any, and its error code
	}{{
		name:    "sibling succeeds",
		sibling: `{"call_id":"x","tool":"set","arguments":{"id":"O1","v":"slow","slow":true}}`,
		want:    "set first, set slow, unset first",
	}, {
		name:    "sibling fails and undoes its write",
		sibling: `{"call_id":"x","tool":"set","arguments":{"id":"O1","v":"slow","slow":true,"bad":true}}`,
		want:    "set first, set slow, unset slow, unset first",
	}, {
		name:     "sibling's undo needs the failing call's entity",
		sibling:  `{"call_id":"x","tool":"set_refund","arguments":{"id":"O1","v":"slow","slow":true,"bad":true,"pay":"P1"}}`,
		want:     "set first, set slow, unset first",
		wantDead: "refund deadlock",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				side := &ledger{}
				note, got := side.note, side.String
				inWrite, release := make(chan struct{}), make(chan struct{})
				set := func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
					var in struct {
						V         string
						Slow, Bad bool
					}
					json.Unmarshal(a, &in)
					if in.Slow {
						close(inWrite)
						<-release // the write is in flight until the test lets it go
					}
					note("set " + in.V)
					return json.Marshal(map[string]any{"v": in.V, "ok": !in.Bad})
				}
				undo := func(name string) reach.ToolFunc {
					return func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
						var in struct{ V string }
						json.Unmarshal(a, &in)
						note(name + " " + in.V)
						return json.RawMessage(`"ok"`), nil
					}
				}
				check := &reach.Verify{Followup: reach.Followup{Tool: "check"}, Condition: "output.ok"}
				rt := reach.New(nil)
				rt.MustRegister(
					reach.Tool{Name: "set", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"}, Func: set,
						Undo: &reach.Followup{Tool: "unset", Args: `{"id": "{args.id}", "v": "{result.v}"}`}, Verify: check},
					reach.Tool{Name: "set_refund", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"}, Func: set,
						Undo: &reach.Followup{Tool: "refund", Args: `{"pay": "{args.pay}", "v": "{result.v}"}`}, Verify: check},
					reach.Tool{Name: "unset", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"}, Func: undo("unset")},
					reach.Tool{Name: "refund", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"payment:{pay}"}, Func: undo("refund")},
					reach.Tool{Name: "check", Reentrancy: reach.Reentrant, Func: echo},
					reach.Tool{Name: "charge", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"payment:{pay}"},
						Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
							<-inWrite // fails while the sibling writes order O1
							return nil, &reach.ToolError{Type: "conflict", Message: "card declined"}
						}},
				)
				ctx, _ := begin(t, rt, nil)
				if res := call(rt, ctx, "set", `{"id":"O1","v":"first"}`); res.IsError() {
					t.Fatal(res.ModelText())
				}
				env, err := reach.DecodeEnvelope([]byte(`{"tool_calls":[` + tt.sibling + `,
					{"call_id":"y","tool":"charge","arguments":{"pay":"P1"}}]}`))
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan *reach.Response)
				go func() { done <- rt.Batch(ctx, env) }()
				<-inWrite
				synctest.Wait() // charge has failed and its compensation has run as far as it can
				if strings.Contains(got(), "unset first") {
					t.Errorf("side effects %s: order O1 was undone while another call of the request was writing it", got())
				}
				close(release)
				resp := <-done
				if y := resp.Results[1]; y.Status != reach.StatusError || len(y.Notes) == 0 || !strings.Contains(y.Notes[len(y.Notes)-1], "unset (undoing set") {
					t.Errorf("charge = %s %s, want it failed and its request's write undone", y.Status, y.ModelText())
				}
				if g := got(); g != tt.want {
					t.Errorf("side effects:\n got %s\nwant %s", g, tt.want)
				}
				var dead []string
				for _, d := range queued(t, rt) {
					dead = append(dead, d.Tool+" "+d.Error.Code)
				}
				if g := strings.Join(dead, "; "); g != tt.wantDead {
					t.Errorf("dead letters = %q, want %q", g, tt.wantDead)
				}
			})
		})
	}
}

// TestSiblingWriteWaitsForUndo: a call that starts writing an entity while
// an undo of its request (for another, failing call) writes it waits for
// the undo, instead of sharing the request's lock with it.
func TestSiblingWriteWaitsForUndo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		side := &ledger{}
		note, got := side.note, side.String
		inUndo, release := make(chan struct{}), make(chan struct{})
		rt := reach.New(nil)
		rt.MustRegister(
			reach.Tool{Name: "set", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"},
				Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
					var in struct{ V string }
					json.Unmarshal(a, &in)
					note("set " + in.V)
					return a, nil
				},
				Undo: &reach.Followup{Tool: "unset", Args: `{"id": "{args.id}", "v": "{args.v}"}`}},
			reach.Tool{Name: "unset", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"},
				Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
					close(inUndo)
					<-release // the undo is in flight until the test lets it go
					note("unset")
					return json.RawMessage(`"ok"`), nil
				}},
			reach.Tool{Name: "charge", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"payment:{pay}"},
				Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					return nil, &reach.ToolError{Type: "conflict", Message: "card declined"}
				}},
		)
		ctx, _ := begin(t, rt, nil)
		if res := call(rt, ctx, "set", `{"id":"O1","v":"first"}`); res.IsError() {
			t.Fatal(res.ModelText())
		}
		var wg sync.WaitGroup
		wg.Go(func() { call(rt, ctx, "charge", `{"pay":"P1"}`) })
		<-inUndo
		second := make(chan *reach.Result, 1)
		go func() {
			second <- rt.Call(ctx, &reach.Call{ID: "second", Tool: "set", Arguments: json.RawMessage(`{"id":"O1","v":"second"}`)})
		}()
		synctest.Wait() // the second write has started as far as it can
		if strings.Contains(got(), "set second") {
			t.Errorf("side effects %s: order O1 was written while an undo of the request was writing it", got())
		}
		close(release)
		wg.Wait()
		// The undo changed order O1 since the request wrote it: the second
		// write, based on what the request last saw, is stale.
		if res := <-second; res.Status != reach.StatusRefused || res.Error.Code != "stale_read" {
			t.Errorf("second write = %s %s, want it refused as a stale read after the undo", res.Status, res.ModelText())
		}
		if g, want := got(), "set first, unset"; g != want {
			t.Errorf("side effects:\n got %s\nwant %s", g, want)
		}
	})
}

// undoTools are the tools of the undo tests: set and unset write an order,
// each the other's undo, and fail for the value "bad"; charge writes a
// payment and fails; pay writes one, and its undo refund always fails. A
// note of each side effect goes to note.
func undoTools(note func(string)) []reach.Tool {
	write := func(name string) reach.ToolFunc {
		return func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			var in struct{ ID, V string }
			json.Unmarshal(a, &in)
			if in.V == "bad" {
				note("FAIL " + name + " " + in.ID + "=" + in.V)
				return nil, &reach.ToolError{Type: "conflict", Message: "bad value"}
			}
			note(name + " " + in.ID + "=" + in.V)
			return a, nil
		}
	}
	return []reach.Tool{
		{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"payment:{pay}"},
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				var in struct{ Pay string }
				json.Unmarshal(a, &in)
				note("pay " + in.Pay)
				return a, nil
			},
			Undo: &reach.Followup{Tool: "refund", Args: `{"pay": "{args.pay}"}`}},
		{Name: "refund", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"payment:{pay}"},
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				note("FAIL refund")
				return nil, &reach.ToolError{Type: "conflict", Message: "refunds are closed"}
			}},
		{Name: "set", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"}, Func: write("set"),
			Undo: &reach.Followup{Tool: "unset", Args: `{"id": "{args.id}", "v": "{args.v}"}`}},
		{Name: "unset", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"}, Func: write("unset"),
			Undo: &reach.Followup{Tool: "set", Args: `{"id": "{args.id}", "v": "{args.v}"}`}},
		{Name: "charge", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"payment:{pay}"},
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				note("FAIL charge")
				return nil, &reach.ToolError{Type: "conflict", Message: "card declined"}
			}},
	}
}

// TestUndoOfUnlinkedCallDoesNotHang: a tool whose Func makes a call with
// its request's context (not nested under its own frame) still holds the
// entity when that call fails: the undo of the request's earlier write to
// the entity cannot wait for it (it waits for the failing call), so it
// writes as the request, sharing the lock, instead of hanging for ever.
func TestUndoOfUnlinkedCallDoesNotHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		side := &ledger{}
		note := side.note
		rt := reach.New(nil)
		rt.MustRegister(undoTools(note)...)
		rt.MustRegister(reach.Tool{Name: "outer", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"},
			Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				req, _ := reach.RequestFrom(ctx)
				res := rt.Call(req.Context(), &reach.Call{ID: "C1", Tool: "charge", Arguments: json.RawMessage(`{"pay":"C1"}`)})
				return json.Marshal(res.Status)
			}})
		ctx, _ := begin(t, rt, nil)
		if res := rt.Call(ctx, &reach.Call{ID: "s", Tool: "set", Arguments: json.RawMessage(`{"id":"O1","v":"a"}`)}); res.IsError() {
			t.Fatal(res.ModelText())
		}
		done := make(chan *reach.Result, 1)
		go func() {
			done <- rt.Call(ctx, &reach.Call{ID: "o", Tool: "outer", Arguments: json.RawMessage(`{"id":"O1"}`)})
		}()
		synctest.Wait()
		select {
		case res := <-done:
			if res.IsError() || string(res.Data) != `"error"` {
				t.Errorf("outer = %s %s, want it to see charge fail", res.Status, res.ModelText())
			}
		default:
			t.Fatal("outer hangs: the undo of the request's write waits for outer, which waits for the failing call")
		}
		if got, want := side.String(), "set O1=a, FAIL charge, unset O1=a"; got != want {
			t.Errorf("side effects:\n got %s\nwant %s", got, want)
		}
	})
}

// TestStopEndsUndoWait: an undo that waits for another call of its request
// writing the entity stops waiting when the request is stopped (cancel):
// it is dead-lettered for an operator, with the stop as its error, and the
// failing call returns; the undo of the write that finishes after the stop
// still runs.
func TestStopEndsUndoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		side := &ledger{}
		note, got := side.note, side.String
		inWrite, release := make(chan struct{}), make(chan struct{})
		rt := reach.New(nil)
		rt.MustRegister(undoTools(note)...)
		rt.MustRegister(reach.Tool{Name: "slow_set", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"},
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				close(inWrite)
				<-release // ignores the cancellation
				note("set O1=slow")
				return a, nil
			},
			Undo: &reach.Followup{Tool: "unset", Args: `{"id": "{args.id}", "v": "slow"}`}},
			reach.Tool{Name: "late_charge", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"payment:{pay}"},
				Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					<-inWrite // fails while slow_set writes order O1
					note("FAIL charge")
					return nil, &reach.ToolError{Type: "conflict", Message: "card declined"}
				}})
		ctx, req := begin(t, rt, nil)
		if res := rt.Call(ctx, &reach.Call{ID: "s", Tool: "set", Arguments: json.RawMessage(`{"id":"O1","v":"first"}`)}); res.IsError() {
			t.Fatal(res.ModelText())
		}
		env, err := reach.DecodeEnvelope([]byte(`{"tool_calls":[{"call_id":"x","tool":"slow_set","arguments":{"id":"O1"}},
			{"call_id":"y","tool":"late_charge","arguments":{"pay":"P1"}}]}`))
		if err != nil {
			t.Fatal(err)
		}
		var batch sync.WaitGroup
		resp := make(chan *reach.Response, 1)
		batch.Go(func() { resp <- rt.Batch(ctx, env) })
		<-inWrite
		synctest.Wait() // charge failed; the undo of set O1=first waits for slow_set
		if g := got(); g != "set O1=first, FAIL charge" {
			t.Fatalf("side effects before the stop: %s", g)
		}
		req.Stop(reach.Cancel, "test", "user left")
		synctest.Wait()
		var dead []string
		for _, d := range queued(t, rt) {
			dead = append(dead, d.Tool+" "+d.Error.Code)
		}
		if g, want := strings.Join(dead, "; "), "unset stopped_cancel"; g != want {
			t.Errorf("dead letters after the stop = %q, want %q", g, want)
		}
		close(release)
		batch.Wait()
		if g, want := got(), "set O1=first, FAIL charge, set O1=slow, unset O1=slow"; g != want {
			t.Errorf("side effects:\n got %s\nwant %s", g, want)
		}
		if y := (<-resp).Results[1]; y.Status != reach.StatusError || !strings.Contains(strings.Join(y.Notes, " "), "dead letter") {
			t.Errorf("charge = %s %s, want it failed, its undo dead-lettered", y.Status, y.ModelText())
		}
	})
}

// TestUndoIsNotUndone: an undo that succeeds registers no undo of its own,
// and a failed undo does not compensate the undos before it: with tools
// that undo each other (set, unset), the compensation of a failure does
// not write back what it undid when a later undo fails, nor hang waiting
// for the failing call; the failed undo is dead-lettered.
func TestUndoIsNotUndone(t *testing.T) {
	tests := []struct {
		name string
		fail string // the failing call's tool and arguments
		want string
	}{{
		name: "another call fails",
		fail: `charge {"pay":"C1"}`,
		want: "pay P1, set O1=a, FAIL charge, unset O1=a, FAIL refund",
	}, {
		name: "a write of the entity fails",
		fail: `set {"id":"O1","v":"bad"}`,
		want: "pay P1, set O1=a, FAIL set O1=bad, unset O1=a, FAIL refund",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				side := &ledger{}
				note := side.note
				rt := reach.New(nil)
				rt.MustRegister(undoTools(note)...)
				ctx, _ := begin(t, rt, nil)
				for i, c := range []string{`pay {"pay":"P1"}`, `set {"id":"O1","v":"a"}`} {
					tool, args, _ := strings.Cut(c, " ")
					if res := rt.Call(ctx, &reach.Call{ID: fmt.Sprint("w", i), Tool: tool, Arguments: json.RawMessage(args)}); res.IsError() {
						t.Fatal(res.ModelText())
					}
				}
				tool, args, _ := strings.Cut(tt.fail, " ")
				done := make(chan *reach.Result, 1)
				go func() { done <- rt.Call(ctx, &reach.Call{ID: "f", Tool: tool, Arguments: json.RawMessage(args)}) }()
				synctest.Wait()
				select {
				case res := <-done:
					if res.Status != reach.StatusError {
						t.Errorf("%s = %s %s, want it failed", tool, res.Status, res.ModelText())
					}
				default:
					t.Fatal("the failing call hangs: an undo of an undo waits for it")
				}
				got := side.String()
				if got != tt.want {
					t.Errorf("side effects:\n got %s\nwant %s", got, tt.want)
				}
				var dead []string
				for _, d := range queued(t, rt) {
					dead = append(dead, d.Tool)
				}
				if g := strings.Join(dead, ", "); g != "refund" {
					t.Errorf("dead letters = %q, want refund", g)
				}
			})
		})
	}
}

// undoCheckpoints records, per ended checkpoint, its tool and whether it
// carries an undo.
type undoCheckpoints struct {
	mu    sync.Mutex
	ended []string
}

func (u *undoCheckpoints) Executing(context.Context, *reach.Checkpoint) error { return nil }

func (u *undoCheckpoints) Ended(_ context.Context, c *reach.Checkpoint) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := c.Tool
	if len(c.Undo) > 0 {
		s += " (undo recorded)"
	}
	u.ended = append(u.ended, s)
}

// TestUndoCheckpointsRecordNoUndo: the checkpoint of an undo, run by a
// compensation or by an operator's retry of its dead letter, records no
// undo of its own, so that a restart never undoes an undo.
func TestUndoCheckpointsRecordNoUndo(t *testing.T) {
	cp := &undoCheckpoints{}
	var broken atomic.Bool // the undo of order O2 fails until the operator retries it
	broken.Store(true)
	rt := reach.New(&reach.Options{Checkpoints: cp})
	rt.MustRegister(
		reach.Tool{Name: "set", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"}, Func: echo,
			Undo: &reach.Followup{Tool: "unset", Args: `{"id": "{args.id}"}`}},
		reach.Tool{Name: "unset", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"},
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				if string(a) == `{"id":"O2"}` && broken.Load() {
					return nil, &reach.ToolError{Type: "conflict", Message: "try later"}
				}
				return a, nil
			},
			Undo: &reach.Followup{Tool: "set", Args: `{"id": "{args.id}"}`}},
	)
	ctx, req := begin(t, rt, nil)
	for _, id := range []string{"O1", "O2"} {
		if res := rt.Call(ctx, &reach.Call{ID: id, Tool: "set", Arguments: json.RawMessage(`{"id":"` + id + `"}`)}); res.IsError() {
			t.Fatal(res.ModelText())
		}
	}
	req.Compensate(ctx, "test") // unset O2 fails, unset O1 succeeds
	dls := queued(t, rt)
	if len(dls) != 1 {
		t.Fatalf("dead letters = %+v, want the undo of O2", dls)
	}
	broken.Store(false)
	if res, _, err := rt.RetryDeadLetter(t.Context(), dls[0].ID, "ops"); err != nil || res.IsError() {
		t.Fatalf("retry: %v %+v", err, res)
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if got, want := strings.Join(cp.ended, ", "), "set (undo recorded), set (undo recorded), unset, unset, unset"; got != want {
		t.Errorf("checkpoints:\n got %s\nwant %s", got, want)
	}
}

// TestWriteThatMayHaveRunChangesTheEntity: a write that reached its tool
// changes the entity's version however it ended (it failed after writing,
// timed out, was cancelled, or was isolated after the tool finished), so a
// write based on an earlier read is refused as stale instead of silently
// overwriting it; a write that did not run again (a replay) changes
// nothing.
func TestWriteThatMayHaveRunChangesTheEntity(t *testing.T) {
	tests := []struct {
		name      string
		how       string // how put ends: fail, wait (for its context), or finish (ignoring it)
		stop      reach.StopMode
		replay    bool // B's write is a replay of one made before A's read
		wantStale bool
	}{
		{name: "fails after writing", how: "fail", wantStale: true},
		{name: "times out", how: "wait", wantStale: true},
		{name: "cancelled", how: "wait", stop: reach.Cancel, wantStale: true},
		{name: "isolated after the tool finished", how: "finish", stop: reach.Isolate, wantStale: true},
		{name: "replayed", how: "finish", replay: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				value := map[string]string{}
				inWrite, finish := make(chan struct{}, 1), make(chan struct{})
				rt := reach.New(nil)
				rt.MustRegister(
					reach.Tool{Name: "get", Reentrancy: reach.Reentrant, Reads: []string{"item:{id}"}, Func: echo},
					reach.Tool{Name: "put", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"item:{id}"}, Timeout: 50 * time.Millisecond,
						Func: func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
							var in struct{ ID, V, How string }
							json.Unmarshal(a, &in)
							mu.Lock()
							value[in.ID] = in.V
							mu.Unlock()
							switch in.How {
							case "fail":
								return nil, &reach.ToolError{Type: "conflict", Message: "failed after writing"}
							case "wait":
								inWrite <- struct{}{}
								<-ctx.Done()
								return nil, ctx.Err()
							case "finish":
								inWrite <- struct{}{}
								<-finish
							}
							return a, nil
						}},
				)
				a, _ := begin(t, rt, nil)
				b, breq := begin(t, rt, nil)
				put := func(ctx context.Context, v, how string) *reach.Result {
					return rt.Call(ctx, &reach.Call{ID: "put-" + v, Tool: "put", IdempotencyKey: "put-" + v,
						Arguments: json.RawMessage(`{"id":"X","v":"` + v + `","how":"` + how + `"}`)})
				}
				if tt.replay {
					go func() { <-inWrite; close(finish) }()
					if res := put(b, "fromB", tt.how); res.IsError() {
						t.Fatal(res.ModelText())
					}
				}
				if res := rt.Call(a, &reach.Call{ID: "get", Tool: "get", Arguments: json.RawMessage(`{"id":"X"}`)}); res.IsError() {
					t.Fatal(res.ModelText())
				}
				if !tt.replay {
					go func() {
						if tt.how == "fail" {
							return
						}
						<-inWrite
						if tt.stop != reach.Running {
							breq.Stop(tt.stop, "test", "stopped")
						}
						if tt.how == "finish" {
							close(finish)
						}
					}()
				}
				if res := put(b, "fromB", tt.how); !tt.replay && !res.IsError() {
					t.Fatalf("B's write = %s, want it failed or refused", res.ModelText())
				} else if tt.replay && !res.Replayed {
					t.Fatalf("B's write = %s, want a replay", res.ModelText())
				}
				mu.Lock()
				x := value["X"]
				mu.Unlock()
				res := put(a, "fromA", "")
				switch {
				case tt.wantStale && (res.Status != reach.StatusRefused || res.Error.Code != "stale_read"):
					t.Errorf("A's write after B's (X was %s) = %s %s, want a stale read", x, res.Status, res.ModelText())
				case !tt.wantStale && res.IsError():
					t.Errorf("A's write after B's replay = %s %s, want it written", res.Status, res.ModelText())
				}
			})
		})
	}
}

// A compensation acts for the principal of the request it compensates, in
// its tenant, with its roles and attributes: its events carry them (so the
// owner's audit view shows them) and a policy sees them on the undo; its
// frames are in the same trace.
func TestCompensationActsForThePrincipal(t *testing.T) {
	rec := &memRecorder{}
	rt := reach.New(&reach.Options{Recorder: rec})
	var undoneBy *reach.Request
	rt.MustRegister(
		reach.Tool{Name: "reserve", Access: reach.Write, Func: echo, Undo: &reach.Followup{Tool: "release", Args: `{"id": "{args.id}"}`}},
		reach.Tool{Name: "release", Access: reach.Write, Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			undoneBy, _ = reach.RequestFrom(ctx)
			return args, nil
		}},
		reach.Tool{Name: "charge", Access: reach.Write, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &reach.ToolError{Type: "conflict", Message: "card declined"}
		}},
	)
	ctx, _ := begin(t, rt, &reach.RequestOptions{ID: "r1", Principal: "alice", Tenant: "acme",
		Roles: []string{"buyer"}, Attributes: map[string]string{"department": "sales"}})
	if res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "reserve", Arguments: json.RawMessage(`{"id":"seat-4"}`)}); res.IsError() {
		t.Fatal(res.ModelText())
	}
	if res := rt.Call(ctx, &reach.Call{ID: "c2", Tool: "charge", Arguments: json.RawMessage(`{"id":"seat-4"}`)}); !res.IsError() {
		t.Fatalf("charge = %s, want an error", res.Status)
	}
	if undoneBy == nil {
		t.Fatal("the undo did not run")
	}
	type who struct {
		Principal, Tenant string
		Roles             []string
		Attributes        map[string]string
	}
	want := who{"alice", "acme", []string{"buyer"}, map[string]string{"department": "sales"}}
	if got := (who{undoneBy.Principal(), undoneBy.Tenant(), undoneBy.Roles(), undoneBy.Attributes()}); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the undo's request acts for %+v, want %+v", got, want)
	}
	if r, _ := reach.RequestFrom(ctx); undoneBy.Trace() != r.Trace() {
		t.Error("the undo's request is not in the trace of the request it compensates")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	found := false
	for _, e := range rec.events {
		if e.Name != "release" {
			continue
		}
		found = true
		if !strings.HasPrefix(e.Request, "r1/compensate/") || e.Principal != "alice" || e.Tenant != "acme" {
			t.Errorf("the undo's event: request %s, principal %q, tenant %q; want r1/compensate/…, alice, acme", e.Request, e.Principal, e.Tenant)
		}
	}
	if !found {
		t.Error("no event for the undo")
	}
}

// While a dead letter's retry runs, it stays in the queue, taken: it is
// listed, and it can be neither retried nor dismissed until the retry
// ends, when it leaves.
func TestDeadLetterBeingRetried(t *testing.T) {
	q := reach.NewMemoryDeadLetters()
	d := &reach.DeadLetter{Request: "r1", Tool: "reopen", Args: json.RawMessage(`{"ticket":7}`), Key: "undo:1"}
	if err := q.Add(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	id := d.ID
	rt := reach.New(&reach.Options{DeadLetters: q})
	var during []string
	rt.MustRegister(reach.Tool{Name: "reopen", Access: reach.Write, Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		if l := queued(t, rt); len(l) != 1 || l[0].ID != id || l[0].State != reach.DeadLetterTaken {
			during = append(during, fmt.Sprintf("the queue during the retry holds %+v; want %s, taken", l, id))
		}
		if _, _, err := rt.RetryDeadLetter(context.Background(), id, "ops"); !errors.Is(err, reach.ErrDeadLetterBusy) {
			during = append(during, fmt.Sprintf("a retry during the retry: %v, want it refused as busy", err))
		}
		if _, err := rt.DismissDeadLetter(context.Background(), id, "ops", "done"); !errors.Is(err, reach.ErrDeadLetterBusy) {
			during = append(during, fmt.Sprintf("a dismissal during the retry: %v, want it refused as busy", err))
		}
		return args, nil
	}})
	res, settled, err := rt.RetryDeadLetter(t.Context(), id, "ops")
	if err != nil || res.IsError() || settled.State != reach.DeadLetterRetried || settled.Attempts != 1 {
		t.Fatalf("retry: %v %+v, settled %+v", err, res, settled)
	}
	for _, e := range during {
		t.Error(e)
	}
	if l := queued(t, rt); len(l) != 0 {
		t.Errorf("after the retry the queue holds %+v", l)
	}
	if _, _, err := rt.RetryDeadLetter(t.Context(), id, "ops"); !errors.Is(err, reach.ErrNoDeadLetter) {
		t.Errorf("retrying a settled dead letter: %v, want ErrNoDeadLetter", err)
	}
}

// queued returns the runtime's open dead letters.
func queued(t *testing.T, rt *reach.Runtime) []reach.DeadLetter {
	t.Helper()
	l, err := rt.DeadLetters(context.Background(), reach.DeadLetterOpen)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestDeadLetterRetryIsInItsRequestsTrace: the retry of a dead letter the
// runtime queued runs in the trace of the request whose write it undoes,
// so the trace shows the write, its failed undo and the operator's retry.
func TestDeadLetterRetryIsInItsRequestsTrace(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	var retriedIn [16]byte
	rt := reach.New(nil)
	rt.MustRegister(
		reach.Tool{Name: "reserve", Access: reach.Write, Func: echo, Undo: &reach.Followup{Tool: "release", Args: `{"id": "{args.id}"}`}},
		reach.Tool{Name: "release", Access: reach.Write, Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			if broken.Load() {
				return nil, &reach.ToolError{Type: "conflict", Message: "try later"}
			}
			r, _ := reach.RequestFrom(ctx)
			retriedIn = r.Trace()
			return args, nil
		}},
	)
	ctx, req := begin(t, rt, nil)
	if res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "reserve", Arguments: json.RawMessage(`{"id":"seat-4"}`)}); res.IsError() {
		t.Fatal(res.ModelText())
	}
	req.Compensate(ctx, "test")
	dls := queued(t, rt)
	if len(dls) != 1 {
		t.Fatalf("dead letters = %+v, want the undo of reserve", dls)
	}
	broken.Store(false)
	if res, _, err := rt.RetryDeadLetter(t.Context(), dls[0].ID, "ops"); err != nil || res.IsError() {
		t.Fatalf("retry: %v %+v", err, res)
	}
	if retriedIn != req.Trace() {
		t.Errorf("the retry ran in trace %x, want its request's %x", retriedIn, req.Trace())
	}
}

// refusingQueue is a dead-letter queue whose store refuses the first
// refuse adds, as a database down a moment does.
type refusingQueue struct {
	reach.DeadLetterQueue
	mu     sync.Mutex
	refuse int
}

func (q *refusingQueue) Add(ctx context.Context, d *reach.DeadLetter) error {
	q.mu.Lock()
	refused := q.refuse > 0
	q.refuse--
	q.mu.Unlock()
	if refused {
		return errors.New("the store is down")
	}
	return q.DeadLetterQueue.Add(ctx, d)
}

// bookThenChargeFails registers on rt a hotel booking with its undo and
// a card charge, writing to l, and runs the booking and then the charge,
// which l fails: the request compensates the booking.
func bookThenChargeFails(t *testing.T, rt *reach.Runtime, l *ledger) {
	t.Helper()
	ok := func(args map[string]any) (any, error) {
		return map[string]any{"ref": "R-" + fmt.Sprint(args["id"])}, nil
	}
	rt.MustRegister(
		reach.Tool{Name: "book_hotel", Access: reach.Write, Reentrancy: reach.Reentrant, Func: l.tool("book_hotel", ok),
			Undo: &reach.Followup{Tool: "cancel_hotel", Args: `{"id": "{args.id}"}`}},
		reach.Tool{Name: "charge_card", Access: reach.Write, Func: l.tool("charge_card", ok)},
		reach.Tool{Name: "cancel_hotel", Access: reach.Write, Func: l.tool("cancel_hotel", ok)},
	)
	ctx, _ := begin(t, rt, nil)
	if res := rt.Call(ctx, &reach.Call{ID: "h", Tool: "book_hotel", Arguments: json.RawMessage(`{"id": 7}`)}); res.IsError() {
		t.Fatal(res.ModelText())
	}
	if res := rt.Call(ctx, &reach.Call{ID: "pay", Tool: "charge_card", Arguments: json.RawMessage(`{"id": 7}`)}); res.Status != reach.StatusError {
		t.Fatalf("charge = %s", res.Status)
	}
}

// TestDeadLetterStoredThroughRefusals: a failed undo whose dead letter the
// store refuses twice (down a moment, its connection cut) is asked again,
// and queued once the store takes it. Before, the first refusal dropped
// it: the undo failed and was in no queue, its write done for good.
func TestDeadLetterStoredThroughRefusals(t *testing.T) {
	q := &refusingQueue{DeadLetterQueue: reach.NewMemoryDeadLetters(), refuse: 2}
	rt := reach.New(&reach.Options{DeadLetters: q})
	bookThenChargeFails(t, rt, &ledger{failing: map[string]bool{"charge_card": true, "cancel_hotel": true}})
	if dls := queued(t, rt); len(dls) != 1 || dls[0].Tool != "cancel_hotel" {
		t.Fatalf("dead letters after two refusals = %+v; want the failed cancel_hotel, once", dls)
	}
}

// refusingBegins is a request recorder whose store refuses the first
// refuse compensations' requests, as a database down a moment does.
type refusingBegins struct {
	mu     sync.Mutex
	refuse int
}

func (b *refusingBegins) RequestBegan(ctx context.Context, r *reach.Request) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if strings.Contains(r.ID(), "/compensate/") && b.refuse > 0 {
		b.refuse--
		return errors.New("the store is down")
	}
	return nil
}

func (b *refusingBegins) RequestStopped(context.Context, *reach.Request, reach.Cause) {}
func (b *refusingBegins) RequestEnded(context.Context, *reach.Request)                {}

// TestCompensationBegunThroughRefusals: a compensation whose request the
// store refuses twice (down a moment, its connection cut) is begun again,
// and its undo runs once. Before, the first refusal dropped the undos,
// taken from the saga: none ran, none was dead-lettered.
func TestCompensationBegunThroughRefusals(t *testing.T) {
	rt := reach.New(&reach.Options{Requests: &refusingBegins{refuse: 2}})
	l := &ledger{failing: map[string]bool{"charge_card": true}}
	bookThenChargeFails(t, rt, l)
	want := []string{"book_hotel 7", "FAIL charge_card", "cancel_hotel 7"}
	if got := strings.Join(l.log, ", "); got != strings.Join(want, ", ") {
		t.Fatalf("side effects:\n got %s\nwant %s", got, strings.Join(want, ", "))
	}
}
