package store

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
)

// Concurrent claims of one key run the work once, and leave no waiter
// behind once everyone returned.
func TestIdempotencyWaitersLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewIdempotency(NewMemory(), nil)
		var runs atomic.Int32
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				rec, claimed, err := s.Claim(t.Context(), &reach.IdemClaim{Key: "k"})
				if err != nil {
					t.Error(err)
					return
				}
				if !claimed {
					if rec == nil || string(rec.Data) != "1" {
						t.Errorf("a waiter got %+v", rec)
					}
					return
				}
				runs.Add(1)
				time.Sleep(time.Second) // others arrive while it runs
				s.Complete("k", &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`1`)})
			})
		}
		wg.Wait()
		if n := runs.Load(); n != 1 {
			t.Errorf("16 concurrent claims ran the work %d times, want 1", n)
		}
		if n := len(s.waits); n != 0 {
			t.Errorf("%d keys still have waiters after everyone returned", n)
		}
	})
}

// holdHook is a Memory whose ClaimKey calls held, once, when it finds a
// key held: between a claim's read of the key and whatever it does next.
// It counts the claims settled.
type holdHook struct {
	*Memory
	held    func()
	settled int
}

func (h *holdHook) SettleClaim(ctx context.Context, c *IdemRecord, result []byte, expires time.Time) error {
	h.settled++
	return h.Memory.SettleClaim(ctx, c, result, expires)
}

func (h *holdHook) ClaimKey(ctx context.Context, c *IdemRecord) (*IdemRecord, bool, error) {
	rec, claimed, err := h.Memory.ClaimKey(ctx, c)
	if f := h.held; !claimed && err == nil && f != nil {
		h.held = nil
		f()
	}
	return rec, claimed, err
}

// A claim that waits for a key held by this instance returns when the
// holder completes it, not at its next poll, and settles nothing: even
// when the holder completes it between the waiter's read of the key and
// its subscription to the key's news (a waiter subscribes only once it
// found the key held, and then reads it again).
func TestIdempotencyWaiterWokenAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before bool // the holder completes right after the waiter's first read
	}{{"while waiting", false}, {"before subscribing", true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := &holdHook{Memory: NewMemory()}
				s := NewIdempotency(st, &IdempotencyOptions{Poll: time.Hour})
				if _, claimed, err := s.Claim(t.Context(), &reach.IdemClaim{Key: "k"}); !claimed || err != nil {
					t.Fatalf("the first claim: %v, %v", claimed, err)
				}
				complete := func() { s.Complete("k", &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`1`)}) }
				wait := time.Second
				if tc.before {
					st.held, wait = complete, 0
				} else {
					go func() {
						time.Sleep(time.Second)
						complete()
					}()
				}
				start := time.Now()
				rec, claimed, err := s.Claim(t.Context(), &reach.IdemClaim{Key: "k"})
				if claimed || err != nil || rec == nil || string(rec.Data) != "1" {
					t.Fatalf("the waiter: %+v, %v, %v; want the recorded result", rec, claimed, err)
				}
				if d := time.Since(start); d != wait {
					t.Errorf("the waiter returned after %v, want %v (its poll is an hour)", d, wait)
				}
				if st.settled != 0 {
					t.Errorf("the waiter settled %d claims, want none (the key's holder completed it)", st.settled)
				}
				if n := len(s.waits); n != 0 {
					t.Errorf("%d keys still have waiters", n)
				}
			})
		})
	}
}

// TestEncodeResult: a result is recorded as json.Marshal writes its
// idemResult, byte for byte when its data is compact and holds nothing
// that json.Marshal escapes for HTML, and as the same JSON value
// otherwise; data that is not JSON is refused.
func TestEncodeResult(t *testing.T) {
	for _, r := range []*reach.Result{
		{Status: reach.StatusSuccess},
		{Status: reach.StatusSuccess, Data: json.RawMessage(`{"ok":true,"n":[1,2.5e3,null],"s":"a \"b\" \u00e9 \n"}`), CallID: "c1"},
		{Status: reach.StatusSuccess, Data: json.RawMessage(`null`), Summary: "one \"line\"\n\t\x01 é ☃", Notes: []string{"a", "", "b\\c"}},
		{Status: reach.StatusError, Data: json.RawMessage(`"x"`), Error: &reach.Error{Code: "e", Message: "<b>no</b>"}, Notes: []string{"n"}},
		{Status: reach.StatusSuccess, Data: json.RawMessage(" {\n \"a\" : [ 1 , \"<&>\" ] ,\"b\":\"\u2028\" }\n"), Summary: "<&> \u2028", CallID: "c<2>"},
	} {
		got, err := encodeResult(r)
		if err != nil {
			t.Fatalf("encodeResult(%+v): %v", r, err)
		}
		want, err := json.Marshal(idemResult{Status: r.Status, Data: r.Data, Error: r.Error, Summary: r.Summary, Notes: r.Notes, CallID: r.CallID})
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		plain := json.Compact(&compact, r.Data) != nil || bytes.Equal(compact.Bytes(), r.Data) && !bytes.ContainsAny(r.Data, "<>&\u2028")
		if plain && !bytes.Equal(got, want) {
			t.Errorf("recorded\n %s\nwant (json.Marshal)\n %s", got, want)
		}
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		json.Unmarshal(want, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("recorded %s, want the value of %s", got, want)
		}
		rec, _, err := decodeResult(&IdemRecord{Result: got})
		if err != nil || rec.Status != r.Status || rec.Summary != r.Summary || rec.CallID != r.CallID || len(rec.Notes) != len(r.Notes) {
			t.Errorf("read back %+v (%v), want %+v", rec, err, r)
		}
	}
	if b, err := encodeResult(&reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`{"a":`)}); err == nil {
		t.Errorf("data that is not JSON recorded as %s", b)
	}
}

// readCount is a Memory that counts the claims that found their key held,
// and calls stop at the 1000th.
type readCount struct {
	*Memory
	held atomic.Int32
	stop func()
}

func (r *readCount) ClaimKey(ctx context.Context, c *IdemRecord) (*IdemRecord, bool, error) {
	rec, claimed, err := r.Memory.ClaimKey(ctx, c)
	if !claimed && err == nil && r.held.Add(1) == 1000 {
		r.stop()
	}
	return rec, claimed, err
}

// A claim that waits for a key this instance holds past its lease (a call
// that runs longer than its tool's lease) waits for its completion, which
// wakes it, reading the key at each poll: it does not read the key again
// and again without waiting because the holder's lease has ended (the
// claim is not stale: this instance still holds it).
func TestIdempotencyWaiterOfLongCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		st := &readCount{Memory: NewMemory(), stop: cancel} // a waiter that spins lets no fake time pass
		s := NewIdempotency(st, &IdempotencyOptions{Poll: time.Second})
		if _, claimed, err := s.Claim(t.Context(), &reach.IdemClaim{Key: "k", Lease: time.Second}); !claimed || err != nil {
			t.Fatalf("the first claim: %v, %v", claimed, err)
		}
		go func() {
			time.Sleep(10 * time.Second) // nine seconds past its lease
			s.Complete("k", &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`1`)})
		}()
		rec, claimed, err := s.Claim(ctx, &reach.IdemClaim{Key: "k"})
		if claimed || err != nil || rec == nil || string(rec.Data) != "1" {
			t.Errorf("the waiter: %+v, %v, %v; want the recorded result", rec, claimed, err)
		}
		if n := st.held.Load(); n > 15 {
			t.Errorf("the waiter read the held key %d times in 10s with a poll of 1s, want about 10", n)
		}
		cancel()
		time.Sleep(10 * time.Second)
	})
}

// queuedSweeps is Memory whose sweep a completion may queue: it counts
// the sweeps queued and those waited for.
type queuedSweeps struct {
	*Memory
	queued, waited int
}

func (q *queuedSweeps) QueueSweepKeys(time.Time) { q.queued++ }

func (q *queuedSweeps) SweepKeys(ctx context.Context, now time.Time) (int, error) {
	q.waited++
	return q.Memory.SweepKeys(ctx, now)
}

// The sweep that every SweepEvery-th completion makes is queued on a store
// that queues writes: the call whose completion it is does not wait for
// its commit.
func TestCompletionQueuesSweep(t *testing.T) {
	recs := &queuedSweeps{Memory: NewMemory()}
	s := NewIdempotency(recs, &IdempotencyOptions{SweepEvery: 2})
	for _, k := range []string{"a", "b", "c", "d"} {
		if _, claimed, err := s.Claim(t.Context(), &reach.IdemClaim{Key: k}); err != nil || !claimed {
			t.Fatal(claimed, err)
		}
		s.Complete(k, &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`1`)})
	}
	if recs.queued != 2 || recs.waited != 0 {
		t.Errorf("4 completions, a sweep every 2: %d sweeps queued and %d waited for, want 2 and 0", recs.queued, recs.waited)
	}
	// A store that does not queue writes is swept as before.
	waited := &waitedSweeps{Memory: NewMemory()}
	s = NewIdempotency(waited, &IdempotencyOptions{SweepEvery: 2})
	for _, k := range []string{"a", "b"} {
		if _, claimed, err := s.Claim(t.Context(), &reach.IdemClaim{Key: k}); err != nil || !claimed {
			t.Fatal(claimed, err)
		}
		s.Complete(k, &reach.Result{Status: reach.StatusSuccess, Data: json.RawMessage(`1`)})
	}
	if waited.waited != 1 {
		t.Errorf("2 completions, a sweep every 2, on a store that does not queue: %d sweeps, want 1", waited.waited)
	}
}

// waitedSweeps is Memory, whose sweeps it counts.
type waitedSweeps struct {
	*Memory
	waited int
}

func (w *waitedSweeps) SweepKeys(ctx context.Context, now time.Time) (int, error) {
	w.waited++
	return w.Memory.SweepKeys(ctx, now)
}
