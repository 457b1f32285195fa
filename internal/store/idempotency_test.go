package store

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
	"github.com/google/go-cmp/cmp"
)

// idemContract runs f in a synctest bubble against every implementation,
// with the store opened inside the bubble.
func idemContract(t *testing.T, f func(t *testing.T, s Store)) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { f(t, impl.open(t)) })
		})
	}
}

// once runs work under key the way the runtime's idempotency stage does.
func once(ctx context.Context, s *Idempotency, key string, work func() *reach.Result) (*reach.Result, bool, error) {
	rec, claimed, err := s.Claim(ctx, key)
	if err != nil || !claimed {
		return rec, false, err
	}
	res := work()
	s.Complete(key, res)
	return res, true, nil
}

func TestIdempotencyRepeat(t *testing.T) {
	idemContract(t, func(t *testing.T, st Store) {
		s := NewIdempotency(st, nil)
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

func TestIdempotencyConcurrentOnce(t *testing.T) {
	idemContract(t, func(t *testing.T, st Store) {
		s := NewIdempotency(st, nil)
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
		if n := len(s.waits); n != 0 {
			t.Errorf("%d keys still have waiters after everyone returned", n)
		}
	})
}

func TestIdempotencyRelease(t *testing.T) {
	idemContract(t, func(t *testing.T, st Store) {
		s := NewIdempotency(st, nil)
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

func TestIdempotencyExpiry(t *testing.T) {
	idemContract(t, func(t *testing.T, st Store) {
		s := NewIdempotency(st, &IdempotencyOptions{TTL: time.Hour})
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

func TestIdempotencyWaitEndsWithContext(t *testing.T) {
	idemContract(t, func(t *testing.T, st Store) {
		s := NewIdempotency(st, nil)
		if _, claimed, _ := s.Claim(t.Context(), "k"); !claimed {
			t.Fatal("first claim failed")
		}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		start := time.Now()
		_, claimed, err := s.Claim(ctx, "k")
		if claimed || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Claim of a held key = %v, %v; want DeadlineExceeded", claimed, err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("the waiter gave up after %v, want 3s", d)
		}
	})
}

// Two instances (two processes) share the records: the second polls.
func TestIdempotencyOtherOwner(t *testing.T) {
	idemContract(t, func(t *testing.T, st Store) {
		a := NewIdempotency(st, &IdempotencyOptions{Poll: 100 * time.Millisecond})
		b := NewIdempotency(st, &IdempotencyOptions{Poll: 100 * time.Millisecond})
		ctx := t.Context()
		if _, claimed, _ := a.Claim(ctx, "k"); !claimed {
			t.Fatal("a could not claim")
		}
		go func() {
			time.Sleep(10*time.Second - 50*time.Millisecond) // between two of b's polls
			a.Complete("k", &reach.Result{Status: reach.StatusSuccess, Summary: "from a"})
		}()
		start := time.Now()
		res, claimed, err := b.Claim(ctx, "k")
		if err != nil || claimed || res.Summary != "from a" {
			t.Fatalf("b.Claim = %+v, %v, %v; want a's result", res, claimed, err)
		}
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("b saw the result after %v, want 10s (the next poll)", d)
		}
	})
}

// A claim never completed (its process died) frees the key after the lease.
func TestIdempotencyLease(t *testing.T) {
	idemContract(t, func(t *testing.T, st Store) {
		opts := &IdempotencyOptions{Lease: time.Minute}
		dead := NewIdempotency(st, opts)
		live := NewIdempotency(st, opts)
		ctx := t.Context()
		if _, claimed, _ := dead.Claim(ctx, "k"); !claimed {
			t.Fatal("first claim failed")
		}
		start := time.Now()
		if _, claimed, err := live.Claim(ctx, "k"); err != nil || !claimed {
			t.Fatalf("Claim after the lease = %v, %v; want claimed", claimed, err)
		}
		if d := time.Since(start); d != time.Minute {
			t.Errorf("the key was taken over after %v, want 1m", d)
		}
	})
}

// With the runtime: a repeated write runs once and replays its result.
func TestIdempotencyWithRuntime(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			s := NewIdempotency(impl.open(t), nil)
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
		})
	}
}
