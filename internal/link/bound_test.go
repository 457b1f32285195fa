package link

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// TestLooseRequestsBoundedPerPrincipal: each call that names no request
// and no session (POST /v1/calls, a model turn linked to nothing) began a
// request that ran until the idle gap, as many as one principal made.
// Past the bound, the principal's request idle the longest ends; another
// principal's does not; when all of the principal's have calls in flight
// the call is refused 429, and a call in one of them names it.
func TestLooseRequestsBoundedPerPrincipal(t *testing.T) {
	rt := reach.New(nil)
	q := NewOwned(t.Context(), rt, time.Hour, Budgets{}).Bound(2)
	t.Cleanup(q.EndAll)
	clock := time.Unix(0, 0) // a second a reading, so that which is idle the longest is plain
	q.SetClock(func() time.Time { clock = clock.Add(time.Second); return clock })
	as := func(p string) context.Context {
		return auth.WithIdentity(context.Background(), &auth.Identity{Principal: p, Tenant: "acme"})
	}
	call := func(ctx context.Context, t0 Target) (*reach.Request, func()) {
		t.Helper()
		_, r, done, err := q.CallContext(ctx, t0, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r, done
	}
	alice, done := call(as("alice"), Target{})
	done()
	var bobs []*reach.Request
	for range 5 {
		r, done := call(as("bob"), Target{})
		done()
		bobs = append(bobs, r)
	}
	for i, r := range bobs {
		if want := i >= 3; (r.State() == reach.RequestRunning) != want {
			t.Errorf("bob's request %d of 5 (bound 2): %s, want running %v", i+1, r.State(), want)
		}
	}
	if alice.State() != reach.RequestRunning {
		t.Errorf("alice's request after bob's 5: %s, want running", alice.State())
	}
	// A request bob names begins one too, and counts.
	named, done := call(as("bob"), Target{Request: "bob-run-1"})
	done()
	if bobs[3].State() == reach.RequestRunning || named.State() != reach.RequestRunning {
		t.Errorf("bob's named request: %s, the one idle the longest %s; want it running, that one ended", named.State(), bobs[3].State())
	}
	// Both of bob's with a call in flight: the next is refused, and a call
	// that names one of them goes on.
	_, held1 := call(as("bob"), Target{})
	r2, held2 := call(as("bob"), Target{})
	defer held1()
	defer held2()
	_, _, _, err := q.CallContext(as("bob"), Target{}, nil)
	var le *Error
	if !errors.As(err, &le) || le.Status != http.StatusTooManyRequests || le.Code != "too_many_requests" || le.Suggestion == "" {
		t.Fatalf("bob's call with his 2 requests busy: %v, want 429 too_many_requests", err)
	}
	if r, done := call(as("bob"), Target{Request: r2.ID()}); r != r2 {
		t.Errorf("bob's call naming his request: in %s, want %s", r.ID(), r2.ID())
	} else {
		done()
	}
	if _, done := call(as("alice"), Target{}); done != nil {
		done()
	}
}

// TestTraceRequestsBoundedPerPrincipal: a sessionless client's call in
// another tracer's trace begins a request for that trace, and a client
// that sends a new trace id with each call began one per call, as many as
// it sent; they are bounded as the requests of calls that name nothing.
func TestTraceRequestsBoundedPerPrincipal(t *testing.T) {
	rt := reach.New(nil)
	q := NewOwned(t.Context(), rt, time.Hour, Budgets{}).Bound(2)
	t.Cleanup(q.EndAll)
	clock := time.Unix(0, 0)
	q.SetClock(func() time.Time { clock = clock.Add(time.Second); return clock })
	ctx := auth.WithIdentity(context.Background(), &auth.Identity{Principal: "bob", Tenant: "acme"})
	client := q.NewClient()
	var rs []*reach.Request
	for i := range 5 {
		_, r, done, err := q.CallContext(ctx, Target{Trace: 42, TraceID: [16]byte{byte(i + 1)}}, client)
		if err != nil {
			t.Fatal(err)
		}
		done()
		rs = append(rs, r)
	}
	for i, r := range rs {
		if want := i >= 3; (r.State() == reach.RequestRunning) != want {
			t.Errorf("the request of bob's trace %d of 5 (bound 2): %s, want running %v", i+1, r.State(), want)
		}
	}
	if _, r, done, err := q.CallContext(ctx, Target{Trace: 43, TraceID: [16]byte{5}}, client); err != nil || r != rs[4] {
		t.Errorf("a call in bob's last trace: %v, want it in that trace's request", err)
	} else {
		done()
	}
}

// TestSweptLooseRequestsUncounted: a loose request that the idle gap
// ends (Sweep) is no longer counted among its principal's: nothing is kept
// of a principal whose loose requests all ended.
func TestSweptLooseRequestsUncounted(t *testing.T) {
	rt := reach.New(nil)
	q := NewOwned(t.Context(), rt, time.Minute, Budgets{}).Bound(2)
	t.Cleanup(q.EndAll)
	clock := time.Unix(0, 0)
	q.SetClock(func() time.Time { return clock })
	ctx := auth.WithIdentity(context.Background(), &auth.Identity{Principal: "bob", Tenant: "acme"})
	for range 2 {
		_, _, done, err := q.CallContext(ctx, Target{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		done()
	}
	clock = clock.Add(time.Hour) // past the idle gap
	q.Sweep()
	q.mu.Lock()
	kept := len(q.loose)
	q.mu.Unlock()
	if kept != 0 {
		t.Errorf("after the idle gap ended bob's loose requests: %d principals' loose requests kept, want none", kept)
	}
}
