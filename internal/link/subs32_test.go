package link

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// TestForeignRootSubsBounded: the sub-requests of in-process sub-agents
// under a root this gateway does not own (begun in the runtime by another
// of its parts) are bounded as an owned root's are: past maxSubs the
// oldest ends, the rest run; EndAll ends those still running. Before, they
// were not counted: any number of them ran under one such root, and a
// stop of the gateway left them running.
func TestForeignRootSubsBounded(t *testing.T) {
	rt := reach.New(nil)
	q := NewOwned(context.Background(), rt, time.Hour, Budgets{})
	ctx, root, err := rt.Begin(context.Background(), &reach.RequestOptions{Principal: LocalPrincipal})
	if err != nil {
		t.Fatal(err)
	}
	_, turn, err := rt.BeginModel(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	var subs []*reach.Request
	for i := range maxSubs + 1 {
		_, sub, err := rt.Delegate(reach.WithParent(root.Context(), turn), &reach.Delegation{Agent: "researcher", Task: fmt.Sprint("task ", i)})
		if err != nil {
			t.Fatal(err)
		}
		q.AddSub(sub)
		subs = append(subs, sub)
	}
	if subs[0].State() != reach.RequestCompleted {
		t.Errorf("past %d sub-requests under a root not owned here the oldest is %s; want it ended", maxSubs, subs[0].State())
	}
	for _, s := range subs[1:] {
		if s.State() != reach.RequestRunning {
			t.Fatalf("sub-request %s of the last %d is %s, want running", s.ID(), maxSubs, s.State())
		}
	}
	q.mu.Lock()
	n := len(q.foreign[root])
	q.mu.Unlock()
	if n > maxSubs {
		t.Errorf("the gateway keeps %d sub-requests of root %s, want at most %d", n, root.ID(), maxSubs)
	}
	q.EndAll()
	for _, s := range subs {
		if s.State() != reach.RequestCompleted {
			t.Fatalf("sub-request %s is %s once the gateway ended what it owns, want completed", s.ID(), s.State())
		}
	}
	if root.State() != reach.RequestRunning {
		t.Errorf("the root not owned here is %s after EndAll, want running (not the gateway's to end)", root.State())
	}
	root.End()
}

// TestRoomEndsTheSubsOfTheRequestItEnds: a request its principal's bound
// ends to make room for a new one (room) ends with the sub-requests of its
// in-process sub-agents, each marked ended, as at its idle gap. Before,
// their contexts ended with it and they stayed running.
func TestRoomEndsTheSubsOfTheRequestItEnds(t *testing.T) {
	rt := reach.New(nil)
	q := NewOwned(context.Background(), rt, time.Hour, Budgets{}).Bound(1)
	t.Cleanup(q.EndAll)
	as := auth.WithIdentity(context.Background(), &auth.Identity{Principal: "alice"})
	ctx, first, done, err := q.CallContext(as, Target{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, turn, err := rt.BeginModel(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	var subs []*reach.Request
	for i := range 3 {
		_, sub, err := rt.Delegate(reach.WithParent(first.Context(), turn), &reach.Delegation{Agent: "researcher", Task: fmt.Sprint("task ", i)})
		if err != nil {
			t.Fatal(err)
		}
		q.AddSub(sub)
		subs = append(subs, sub)
	}
	turn.EndModel(reach.TokenUsage{})
	done()
	_, next, done, err := q.CallContext(as, Target{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if next == first || first.State() != reach.RequestCompleted {
		t.Fatalf("alice's second request (bound 1): the first is %s; want it ended for the second", first.State())
	}
	for _, s := range subs {
		if s.State() != reach.RequestCompleted {
			t.Errorf("sub-request %s of the request ended for room is %s, want completed", s.ID(), s.State())
		}
		if d := s.DelegateFrame(); d == nil || !d.State().Done() {
			t.Errorf("the delegate frame of sub-request %s is not ended", s.ID())
		}
	}
}

// TestOwnedBeginsNothingAfterEndAll: once EndAll ran (the gateway stops),
// a call that would begin a request, however it names it, is refused
// shutting_down (503: nothing ran, another instance may take it) and no
// request is begun. Before, it began one that nothing ended: left running.
func TestOwnedBeginsNothingAfterEndAll(t *testing.T) {
	rt := reach.New(nil)
	q := NewOwned(context.Background(), rt, time.Hour, Budgets{})
	as := auth.WithIdentity(context.Background(), &auth.Identity{Principal: "alice"})
	_, r, done, err := q.CallContext(as, Target{}, q.NewSession())
	if err != nil {
		t.Fatal(err)
	}
	done()
	q.EndAll()
	before := len(rt.Requests())
	for _, c := range []struct {
		name string
		t    Target
		s    *Session
	}{
		{"no request, no session", Target{}, nil},
		{"a request named", Target{Request: "named-after-end"}, nil},
		{"the ended request named", Target{Request: r.ID()}, nil},
		{"a session", Target{}, q.NewSession()},
		{"a sessionless client", Target{}, q.NewClient()},
		{"a trace", Target{TraceID: [16]byte{1}}, q.NewClient()},
	} {
		_, got, done, err := q.CallContext(as, c.t, c.s)
		if err == nil {
			done()
			t.Errorf("%s after EndAll: began request %s (%s), want shutting_down", c.name, got.ID(), got.State())
			continue
		}
		le, ok := errors.AsType[*Error](err)
		if !ok || le.Code != "shutting_down" || le.Status != http.StatusServiceUnavailable || le.Suggestion == "" {
			t.Errorf("%s after EndAll: %v, want 503 shutting_down with a suggestion", c.name, err)
		}
	}
	if n := len(rt.Requests()); n != before {
		t.Errorf("the runtime holds %d requests after the refused calls, %d before", n, before)
	}
}
