package reach

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestAttemptReportsWhatWithTimeoutCauseWould: an attempt's context,
// whose timer is made only when something waits for it, reports what
// context.WithTimeoutCause(parent, timeout, errAttemptTimeout) reports,
// with the frame and the key as values, whether or not something waited
// on it, as its deadline passes, as its parent ends and once it ended.
func TestAttemptReportsWhatWithTimeoutCauseWould(t *testing.T) {
	errStop := errors.New("the request stopped")
	const timeout = time.Second
	for _, tc := range []struct {
		name string
		wait bool // Done is called at once (a caller that waits)
		// what happens, in order: sleep(d), cancel the parent, end the attempt
		steps []string
		// sooner: the parent has a deadline of its own, half the attempt's
		sooner bool
	}{
		{name: "running", steps: nil},
		{name: "running, waited on", wait: true},
		{name: "deadline passed", steps: []string{"sleep"}},
		{name: "deadline passed, waited on", wait: true, steps: []string{"sleep"}},
		{name: "parent cancelled", steps: []string{"cancel"}},
		{name: "parent cancelled, waited on", wait: true, steps: []string{"cancel"}},
		{name: "parent cancelled after the deadline", wait: true, steps: []string{"sleep", "cancel"}},
		{name: "ended", steps: []string{"end"}},
		{name: "ended, waited on", wait: true, steps: []string{"end"}},
		{name: "ended, then the parent cancelled", steps: []string{"end", "cancel"}},
		{name: "ended, then the deadline passed", steps: []string{"end", "sleep"}},
		{name: "ended after the deadline", steps: []string{"sleep", "end", "cancel"}},
		{name: "ended after the parent", steps: []string{"cancel", "end"}},
		{name: "the parent's deadline sooner", sooner: true},
		{name: "the parent's deadline sooner, passed", sooner: true, steps: []string{"sleep"}},
		{name: "the parent's deadline sooner, passed, waited on", sooner: true, wait: true, steps: []string{"sleep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, key := &Frame{}, "tool:key"
				wparent, wcancel := context.WithCancelCause(context.Background())
				gparent, gcancel := context.WithCancelCause(context.Background())
				if tc.sooner {
					d := time.Now().Add(timeout / 2)
					var wstop, gstop context.CancelFunc
					wparent, wstop = context.WithDeadlineCause(wparent, d, errStop)
					gparent, gstop = context.WithDeadlineCause(gparent, d, errStop)
					defer wstop()
					defer gstop()
				}
				want, wend := context.WithTimeoutCause(context.WithValue(context.WithValue(wparent, posKey{}, f), idemKey{}, &key), timeout, errAttemptTimeout)
				got := newAttempt(gparent, f, &key, timeout)
				if tc.wait {
					want.Done()
					got.Done()
				}
				for _, s := range tc.steps {
					switch s {
					case "sleep":
						time.Sleep(timeout)
						synctest.Wait()
					case "cancel":
						wcancel(errStop)
						gcancel(errStop)
					case "end":
						wend()
						got.end()
					}
				}
				wd, _ := want.Deadline()
				gd, _ := got.Deadline()
				if !gd.Equal(wd) {
					t.Errorf("Deadline %v, want %v", gd, wd)
				}
				if g, w := got.Err(), want.Err(); g != w {
					t.Errorf("Err %v, want %v", g, w)
				}
				if g, w := context.Cause(got), context.Cause(want); g != w {
					t.Errorf("Cause %v, want %v", g, w)
				}
				if g, w := closed(got.Done()), closed(want.Done()); g != w {
					t.Errorf("Done closed %v, want %v", g, w)
				}
				// A context derived later ends as it would.
				dg, stopg := context.WithCancel(got)
				dw, stopw := context.WithCancel(want)
				if g, w := context.Cause(dg), context.Cause(dw); g != w {
					t.Errorf("a derived context's Cause %v, want %v", g, w)
				}
				stopg()
				stopw()
				if fr, _ := FrameFrom(got); fr != f {
					t.Errorf("FrameFrom %p, want %p", fr, f)
				}
				if k, _ := IdempotencyKey(got); k != key {
					t.Errorf("IdempotencyKey %q, want %q", k, key)
				}
				wend()
				got.end()
				wcancel(nil)
				gcancel(nil)
			})
		})
	}
}

// TestAttemptTimesOutWhenWaitedOn: a waiter sees the attempt end at its
// deadline, with its cause; one hooked with AfterCancel (which enforces
// the deadline itself) sees only the parent's end.
func TestAttemptTimesOutWhenWaitedOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		a := newAttempt(parent, &Frame{}, nil, time.Second)
		hooked := make(chan struct{})
		stop := a.AfterCancel(func() { close(hooked) })
		start := time.Now()
		<-a.Done()
		if d := time.Since(start); d != time.Second {
			t.Errorf("ended after %v, want 1s", d)
		}
		if c := context.Cause(a); c != errAttemptTimeout {
			t.Errorf("Cause %v, want errAttemptTimeout", c)
		}
		synctest.Wait()
		if closed(hooked) {
			t.Error("AfterCancel's function ran at the deadline")
		}
		cancel(errors.New("stopped"))
		synctest.Wait()
		if !closed(hooked) {
			t.Error("AfterCancel's function did not run when the parent ended")
		}
		if stop() {
			t.Error("stop reported the function stopped after it ran")
		}
		a.end()
	})
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// countingCtx counts the questions asked of a context.
type countingCtx struct {
	context.Context
	deadlines, errs int
}

func (c *countingCtx) Deadline() (time.Time, bool) { c.deadlines++; return c.Context.Deadline() }
func (c *countingCtx) Err() error                  { c.errs++; return c.Context.Err() }

// TestAttemptChainAsksItsRootOnce: a call nested 100 deep has 100
// attempts above it; its Err asks the context at the root once (through
// the chain, one clock read), and its Deadline not at all, whatever the
// depth: asking each parent's deadline at every level of every Err made a
// call at depth 100 cost some 300 µs (BenchmarkCall/depth=100).
func TestAttemptChainAsksItsRootOnce(t *testing.T) {
	root := &countingCtx{Context: context.Background()}
	var ctx context.Context = root
	var leaf *attempt
	for range 100 {
		leaf = newAttempt(ctx, nil, nil, time.Minute)
		ctx = leaf
	}
	root.deadlines, root.errs = 0, 0
	for range 10 {
		if err := leaf.Err(); err != nil {
			t.Fatal(err)
		}
		if _, ok := leaf.Deadline(); !ok {
			t.Fatal("no deadline")
		}
	}
	if root.deadlines != 0 || root.errs != 10 {
		t.Errorf("10 Errs and Deadlines at depth 100 asked the root %d deadlines and %d errors, want 0 and 10", root.deadlines, root.errs)
	}
}
