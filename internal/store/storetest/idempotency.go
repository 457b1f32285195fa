package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
	"github.com/google/go-cmp/cmp"
)

// idemContract runs f in a synctest bubble, with the store opened inside
// the bubble.
func idemContract(t *testing.T, open Opener, f func(t *testing.T, s store.Store)) {
	synctest.Test(t, func(t *testing.T) { f(t, open(t)) })
}

// once runs work under key the way the runtime's idempotency stage does.
func once(ctx context.Context, s *store.Idempotency, key string, work func() *reach.Result) (*reach.Result, bool, error) {
	rec, claimed, err := s.Claim(ctx, &reach.IdemClaim{Key: key})
	if err != nil || !claimed {
		return rec, false, err
	}
	res := work()
	s.Complete(key, res)
	return res, true, nil
}

func testIdempotencyRepeat(t *testing.T, open Opener) {
	idemContract(t, open, func(t *testing.T, st store.Store) {
		s := store.NewIdempotency(st, nil)
		want := &reach.Result{CallID: "c1", Status: reach.StatusSuccess, Data: json.RawMessage(`{"paid":true}`),
			Summary: "paid", Notes: []string{"n1"}}
		runs := 0
		for i := range 3 {
			got, ran, err := once(t.Context(), s, "pay:r1/c1", func() *reach.Result { runs++; return want })
			if err != nil {
				t.Fatal(err)
			}
			if ran != (i == 0) {
				t.Errorf("call %d ran = %v", i, ran)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("call %d result (-want +got):\n%s", i, diff)
			}
		}
		if runs != 1 {
			t.Errorf("the work ran %d times, want 1", runs)
		}
	})
}

func testIdempotencyConcurrentOnce(t *testing.T, open Opener) {
	idemContract(t, open, func(t *testing.T, st store.Store) {
		s := store.NewIdempotency(st, nil)
		var runs atomic.Int32
		var wg sync.WaitGroup
		results := make([]*reach.Result, 16)
		for i := range results {
			wg.Go(func() {
				res, _, err := once(t.Context(), s, "k", func() *reach.Result {
					runs.Add(1)
					time.Sleep(time.Second) // others arrive while it runs
					return &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`1`)}
				})
				if err != nil {
					t.Error(err)
					return
				}
				results[i] = res
			})
		}
		wg.Wait()
		if n := runs.Load(); n != 1 {
			t.Errorf("16 concurrent claims ran the work %d times, want 1", n)
		}
		for i, r := range results {
			if r == nil || string(r.Data) != "1" {
				t.Errorf("caller %d got %+v", i, r)
			}
		}
	})
}

func testIdempotencyRelease(t *testing.T, open Opener) {
	idemContract(t, open, func(t *testing.T, st store.Store) {
		s := store.NewIdempotency(st, nil)
		ctx := t.Context()
		runs := 0
		fail := func() *reach.Result { runs++; return nil } // the call failed: release
		ok := func() *reach.Result { runs++; return &reach.Result{Status: reach.StatusSuccess} }
		for _, w := range []func() *reach.Result{fail, fail, ok, ok} {
			if _, _, err := once(ctx, s, "k", w); err != nil {
				t.Fatal(err)
			}
		}
		if runs != 3 {
			t.Errorf("ran %d times, want 3 (two released failures, then one success recorded)", runs)
		}
	})
}

func testIdempotencyExpiry(t *testing.T, open Opener) {
	idemContract(t, open, func(t *testing.T, st store.Store) {
		s := store.NewIdempotency(st, &store.IdempotencyOptions{TTL: time.Hour})
		ctx := t.Context()
		runs := 0
		work := func() *reach.Result { runs++; return &reach.Result{Status: reach.StatusSuccess} }
		once(ctx, s, "k", work)
		time.Sleep(time.Hour - time.Nanosecond)
		if _, ran, _ := once(ctx, s, "k", work); ran {
			t.Fatal("the record expired before its TTL")
		}
		if n, err := s.Sweep(ctx); err != nil || n != 0 {
			t.Fatalf("Sweep before the TTL = %d, %v; want 0", n, err)
		}
		time.Sleep(time.Nanosecond)
		if n, err := s.Sweep(ctx); err != nil || n != 1 {
			t.Fatalf("Sweep at the TTL = %d, %v; want 1", n, err)
		}
		if _, ran, _ := once(ctx, s, "k", work); !ran {
			t.Fatal("an expired key did not run again")
		}
		if runs != 2 {
			t.Errorf("ran %d times, want 2", runs)
		}
	})
}

// The sweep a completion makes (queued on a store that queues writes)
// meets a claim of a key whose result it finds expired: whether the sweep
// lands first, or the claim (and the result of the call it claimed for)
// before a sweep of an earlier time, the key's new result stays, and an
// expired result never swept (a crash lost the sweep) is free to claim.
func testIdempotencySweepMeetsClaim(t *testing.T, open Opener) {
	idemContract(t, open, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		s := store.NewIdempotency(st, &store.IdempotencyOptions{TTL: time.Hour, SweepEvery: 2})
		runs := 0
		work := func(v string) func() *reach.Result {
			return func() *reach.Result {
				runs++
				return &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(v)}
			}
		}
		once(ctx, s, "k", work(`1`)) // the first completion: no sweep
		time.Sleep(time.Hour)        // k's result has expired
		swept := time.Now()
		once(ctx, s, "x", work(`0`)) // the second: a sweep, of k's record
		// k claimed again at once: the sweep may not have landed yet.
		if _, ran, err := once(ctx, s, "k", work(`2`)); err != nil || !ran {
			t.Fatalf("the expired key claimed again: ran %v, %v", ran, err)
		}
		// A sweep of a time before that claim lands after it.
		if q, ok := st.(interface{ QueueSweepKeys(time.Time) }); ok {
			q.QueueSweepKeys(swept)
		} else if _, err := st.SweepKeys(ctx, swept); err != nil {
			t.Fatal(err)
		}
		once(ctx, s, "y", work(`0`)) // and one more sweep
		got, ran, err := once(ctx, s, "k", work(`3`))
		if err != nil || ran || got == nil || string(got.Data) != `2` {
			t.Fatalf("k after the sweeps: ran %v, result %+v, %v; want its second result replayed", ran, got, err)
		}
		// An expired result no sweep deleted is claimed all the same.
		s = store.NewIdempotency(st, &store.IdempotencyOptions{TTL: time.Hour, SweepEvery: 1 << 30})
		once(ctx, s, "z", work(`1`))
		time.Sleep(time.Hour)
		if _, ran, err := once(ctx, s, "z", work(`2`)); err != nil || !ran {
			t.Fatalf("an expired result never swept: claimed again %v, %v; want its key free", ran, err)
		}
		if runs != 6 {
			t.Errorf("the work ran %d times, want 6", runs)
		}
	})
}

func testIdempotencyWaitEndsWithContext(t *testing.T, open Opener) {
	idemContract(t, open, func(t *testing.T, st store.Store) {
		s := store.NewIdempotency(st, nil)
		if _, claimed, _ := s.Claim(t.Context(), &reach.IdemClaim{Key: "k"}); !claimed {
			t.Fatal("first claim failed")
		}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		start := time.Now()
		_, claimed, err := s.Claim(ctx, &reach.IdemClaim{Key: "k"})
		if claimed || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Claim of a held key = %v, %v; want DeadlineExceeded", claimed, err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("the waiter gave up after %v, want 3s", d)
		}
	})
}

// Two instances (two processes) share the records: the second polls.
func testIdempotencyOtherOwner(t *testing.T, open Opener) {
	idemContract(t, open, func(t *testing.T, st store.Store) {
		a := store.NewIdempotency(st, &store.IdempotencyOptions{Poll: 100 * time.Millisecond})
		b := store.NewIdempotency(st, &store.IdempotencyOptions{Poll: 100 * time.Millisecond})
		ctx := t.Context()
		if _, claimed, _ := a.Claim(ctx, &reach.IdemClaim{Key: "k"}); !claimed {
			t.Fatal("a could not claim")
		}
		go func() {
			time.Sleep(10*time.Second - 50*time.Millisecond) // between two of b's polls
			a.Complete("k", &reach.Result{Status: reach.StatusSuccess, Summary: "from a"})
		}()
		start := time.Now()
		res, claimed, err := b.Claim(ctx, &reach.IdemClaim{Key: "k"})
		if err != nil || claimed || res.Summary != "from a" {
			t.Fatalf("b.Claim = %+v, %v, %v; want a's result", res, claimed, err)
		}
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("b saw the result after %v, want 10s (the next poll)", d)
		}
	})
}

// A claim never completed (its process died) is settled after its lease
// by whoever waits for it, by what its call's checkpoint says: released
// (the waiter runs the call) if the call never started, answered with an
// error if it started. Nothing runs twice.
func testIdempotencyLease(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name       string
		checkpoint string // the state of the dead call's checkpoint; "" for none, "-" for a call not checkpointed
		code       string // the error the waiter gets; "" when it claims the key
	}{
		{"not checkpointed", "-", "interrupted"},
		{"never started", "", ""},
		{"executing", "executing", "interrupted"},
		{"failed", "failed", "interrupted"},
		{"completed", "completed", "result_lost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idemContract(t, open, func(t *testing.T, st store.Store) {
				dead := store.NewIdempotency(st, nil)
				live := store.NewIdempotency(st, nil)
				ctx := t.Context()
				c := &reach.IdemClaim{Key: "k", Args: "d1", Request: "r1", Frame: 0xf1, Lease: time.Minute}
				if tc.checkpoint == "-" {
					c.Request, c.Frame = "", 0
				}
				if _, claimed, _ := dead.Claim(ctx, c); !claimed {
					t.Fatal("first claim failed")
				}
				if tc.checkpoint != "" && tc.checkpoint != "-" {
					if err := st.PutFrame(ctx, &store.Frame{Request: "r1", Frame: c.Frame.String(), Kind: "tool", Name: "pay",
						IdemKey: "k", State: tc.checkpoint, Started: time.Now()}); err != nil {
						t.Fatal(err)
					}
				}
				start := time.Now()
				res, claimed, err := live.Claim(ctx, &reach.IdemClaim{Key: "k", Args: "d1", Lease: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d != time.Minute {
					t.Errorf("the claim was settled after %v, want 1m (its lease)", d)
				}
				switch {
				case tc.code == "" && !claimed:
					t.Fatalf("the waiter got %+v; want it to claim the key of a call that never started", res)
				case tc.code != "" && (claimed || res.Status != reach.StatusError || res.Error == nil || res.Error.Code != tc.code):
					t.Fatalf("the waiter got %+v (claimed %v); want an error %s", res, claimed, tc.code)
				}
				if tc.code != "" && res.Error.Suggestion == "" {
					t.Errorf("the error %s says nothing of what to do", tc.code)
				}
				// A third caller gets the same, at once.
				if tc.code != "" {
					again, claimed, err := store.NewIdempotency(st, nil).Claim(ctx, &reach.IdemClaim{Key: "k", Args: "d1"})
					if err != nil || claimed || again.Error == nil || again.Error.Code != tc.code {
						t.Errorf("a later caller got %+v, %v, %v", again, claimed, err)
					}
				}
			})
		})
	}
}

// A claim of this instance's own life that it no longer holds (its result
// could not be written) does not keep a waiter: it is settled at once.
func testIdempotencyOwnLostClaim(t *testing.T, open Opener) {
	idemContract(t, open, func(t *testing.T, st store.Store) {
		s := store.NewIdempotency(st, nil)
		ctx := t.Context()
		if _, ok, err := st.ClaimKey(ctx, &store.IdemRecord{Key: "k", Owner: s.Owner(), Claimed: time.Now(), Expires: time.Now().Add(time.Hour)}); !ok || err != nil {
			t.Fatalf("ClaimKey = %v, %v", ok, err)
		}
		start := time.Now()
		res, claimed, err := s.Claim(ctx, &reach.IdemClaim{Key: "k"})
		if err != nil || claimed || res.Error == nil || res.Error.Code != "interrupted" {
			t.Fatalf("Claim = %+v, %v, %v; want the lost claim settled as interrupted", res, claimed, err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the waiter waited %v for a claim nobody holds", d)
		}
	})
}

// A key is not reused for other arguments, whether its call is done or
// still running: the caller learns it at once.
func testIdempotencyArgsReused(t *testing.T, open Opener) {
	idemContract(t, open, func(t *testing.T, st store.Store) {
		s := store.NewIdempotency(st, nil)
		ctx := t.Context()
		if _, claimed, _ := s.Claim(ctx, &reach.IdemClaim{Key: "k", Args: "a"}); !claimed {
			t.Fatal("first claim failed")
		}
		start := time.Now()
		if _, _, err := s.Claim(ctx, &reach.IdemClaim{Key: "k", Args: "b"}); !errors.Is(err, reach.ErrIdempotencyKeyReused) {
			t.Fatalf("Claim of a held key with other arguments = %v, want ErrIdempotencyKeyReused", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the refusal waited %v", d)
		}
		s.Complete("k", &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`1`)})
		if _, _, err := s.Claim(ctx, &reach.IdemClaim{Key: "k", Args: "b"}); !errors.Is(err, reach.ErrIdempotencyKeyReused) {
			t.Fatalf("Claim of a done key with other arguments = %v, want ErrIdempotencyKeyReused", err)
		}
		res, claimed, err := s.Claim(ctx, &reach.IdemClaim{Key: "k", Args: "a"})
		if err != nil || claimed || string(res.Data) != "1" {
			t.Fatalf("Claim with the same arguments = %+v, %v, %v; want the recorded result", res, claimed, err)
		}
	})
}

// Recover settles the claims of this instance's earlier lives, whatever
// their lease, and other instances' claims whose lease has ended, each by
// its checkpoint; it leaves the claims that may still be running.
func testIdempotencyRecover(t *testing.T, open Opener) {
	idemContract(t, open, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		now := time.Now()
		claims := []struct {
			owner, frame, checkpoint string
			lease                    time.Duration
			want                     string // outcome; "" for left alone
		}{
			{"reach/dead", "01", "", time.Hour, store.SettledReleased},
			{"reach/dead", "02", "executing", time.Hour, store.SettledInterrupted},
			{"reach/dead", "03", "completed", time.Hour, store.SettledResultLost},
			{"idem-0123456789abcdef", "04", "", 0, store.SettledReleased}, // an older binary's, no lease
			{"other/alive", "05", "executing", time.Hour, ""},
			{"other/dead", "06", "executing", -time.Second, store.SettledInterrupted},
		}
		for _, c := range claims {
			key := "k" + c.frame
			if _, ok, err := st.ClaimKey(ctx, &store.IdemRecord{Key: key, Owner: c.owner, Request: "r1", Frame: c.frame,
				Claimed: now, Expires: now.Add(c.lease)}); !ok || err != nil {
				t.Fatalf("ClaimKey(%s) = %v, %v", key, ok, err)
			}
			if c.checkpoint != "" {
				st.PutFrame(ctx, &store.Frame{Request: "r1", Frame: c.frame, State: c.checkpoint, IdemKey: key, Started: now})
			}
		}
		s := store.NewIdempotency(st, nil)
		settled, err := s.Recover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, x := range settled {
			got[x.Claim.Key] = x.Outcome
		}
		want := map[string]string{}
		for _, c := range claims {
			if c.want != "" {
				want["k"+c.frame] = c.want
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Recover settled (-want +got):\n%s", diff)
		}
		left, _ := st.ClaimedKeys(ctx)
		if len(left) != 1 || left[0].Key != "k05" {
			t.Errorf("claims left after Recover: %+v; want only the live instance's k05", left)
		}
		// The released keys run again; the others answer with an error.
		for _, c := range claims[:4] {
			res, claimed, err := s.Claim(ctx, &reach.IdemClaim{Key: "k" + c.frame})
			if err != nil || claimed != (c.want == store.SettledReleased) || (!claimed && res.Error.Code != c.want) {
				t.Errorf("Claim(k%s) after Recover = %+v, %v, %v; want outcome %s", c.frame, res, claimed, err, c.want)
			}
		}
	})
}

// With the runtime: a repeated write runs once and replays its result.
func testIdempotencyWithRuntime(t *testing.T, open Opener) {
	s := store.NewIdempotency(open(t), nil)
	rt := reach.New(&reach.Options{Idempotency: s})
	var runs atomic.Int32
	rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`{"paid":3}`), nil
		}})
	ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	first := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "pay", Arguments: json.RawMessage(`{}`)})
	second := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "pay", Arguments: json.RawMessage(`{}`)})
	if first.Status != reach.StatusSuccess || second.Status != reach.StatusSuccess {
		t.Fatalf("statuses %s, %s: %v %v", first.Status, second.Status, first.Error, second.Error)
	}
	if runs.Load() != 1 || !second.Replayed || string(second.Data) != `{"paid":3}` {
		t.Errorf("runs %d, replayed %v, data %s; want 1, true, {\"paid\":3}", runs.Load(), second.Replayed, second.Data)
	}
}

// endsOnly is a Checkpointer whose Executing must not be called: the claim
// wrote the "executing" checkpoint. It writes the ends.
type endsOnly struct {
	st        store.Store
	executing atomic.Int32
}

func (e *endsOnly) Executing(ctx context.Context, c *reach.Checkpoint) error {
	e.executing.Add(1)
	return nil
}

func (e *endsOnly) Ended(ctx context.Context, c *reach.Checkpoint) {
	e.st.PutFrame(ctx, &store.Frame{Request: c.Request, Frame: c.Frame.String(), Kind: "tool", Name: c.Tool, CallID: c.CallID,
		State: c.State.String(), Started: c.Started})
}

// A claim that carries the call's "executing" checkpoint writes it with the
// claim, and only when the claim is taken: the call pays one commit, and a
// call that finds the key held leaves no checkpoint behind.
func testIdempotencyClaimWritesCheckpoint(t *testing.T, open Opener) {
	st := open(t)
	ctx := t.Context()
	exec := func(request, frame string) *store.Frame {
		return &store.Frame{Request: request, Frame: frame, Kind: "tool", Name: "pay", State: "executing",
			Args: []byte(`{"n":1}`), Started: time.Now()}
	}
	now := time.Now()
	_, claimed, err := st.ClaimKey(ctx, &store.IdemRecord{Key: "k1", Owner: "a", Request: "r1", Frame: "f1", Claimed: now,
		Expires: now.Add(time.Hour), Executing: exec("r1", "f1")})
	if err != nil || !claimed {
		t.Fatalf("ClaimKey = %v, %v; want claimed", claimed, err)
	}
	// The key is held: the second claim's checkpoint is not written.
	held, claimed, err := st.ClaimKey(ctx, &store.IdemRecord{Key: "k1", Owner: "b", Request: "r2", Frame: "f2", Claimed: now,
		Expires: now.Add(time.Hour), Executing: exec("r2", "f2")})
	if err != nil || claimed || held == nil || held.Owner != "a" {
		t.Fatalf("second ClaimKey = %+v, %v, %v; want a's claim", held, claimed, err)
	}
	fs, err := st.RequestFrames(ctx, "r1")
	if err != nil || len(fs) != 1 || fs[0].State != "executing" || string(fs[0].Args) != `{"n":1}` {
		t.Fatalf("frames of r1 = %+v, %v; want the executing checkpoint", fs, err)
	}
	if fs, err := st.RequestFrames(ctx, "r2"); err != nil || len(fs) != 0 {
		t.Fatalf("frames of r2 = %+v, %v; want none (its claim was not taken)", fs, err)
	}

	// Through the runtime: the Checkpointer is not asked for the
	// "executing" record, which is in the store when the tool runs.
	cp := &endsOnly{st: st}
	s := store.NewIdempotency(st, &store.IdempotencyOptions{Checkpoint: func(c *reach.Checkpoint) *store.Frame {
		return &store.Frame{Request: c.Request, Frame: c.Frame.String(), Kind: "tool", Name: c.Tool, CallID: c.CallID,
			IdemKey: c.IdempotencyKey, State: c.State.String(), Args: c.Args, Started: c.Started}
	}})
	rt := reach.New(&reach.Options{Idempotency: s, Checkpoints: cp})
	var during []*store.Frame
	rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			during, _ = st.RequestFrames(context.WithoutCancel(ctx), "r3")
			return json.RawMessage(`{"paid":1}`), nil
		}})
	ctx3, req, err := rt.Begin(ctx, &reach.RequestOptions{ID: "r3"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	if res := rt.Call(ctx3, &reach.Call{ID: "c1", Tool: "pay", Arguments: json.RawMessage(`{}`)}); res.Status != reach.StatusSuccess {
		t.Fatalf("call: %s %v", res.Status, res.Error)
	}
	if n := cp.executing.Load(); n != 0 {
		t.Errorf("Checkpointer.Executing was called %d times; the claim wrote the checkpoint", n)
	}
	if len(during) != 1 || during[0].State != "executing" || during[0].Name != "pay" {
		t.Errorf("while the tool ran the store held %+v; want its executing checkpoint", during)
	}
	if fs, err := st.RequestFrames(ctx, "r3"); err != nil || len(fs) != 1 || fs[0].State != "completed" {
		t.Errorf("after the call the store holds %+v, %v; want it completed", fs, err)
	}
}
