package link

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// TestCallContextEndsWithItsCaller: a call's context ends when the
// context it was asked for ends, with that context's cause, whether it
// hooks it (a POST's, another's) or the request's own context ends with
// it (the gateway's life, which the fast lane passes; a context that
// never ends); when its request ends; when its cancel is called; and
// once done.
func TestCallContextEndsWithItsCaller(t *testing.T) {
	errGone := errors.New("the caller is gone")
	for _, tc := range []struct {
		name string
		// caller returns the context the call is asked for, given the
		// gateway's life, and what ends it.
		caller func(life context.Context) (context.Context, func())
		// named: the call names a request the gateway did not begin.
		named bool
	}{
		{name: "the gateway's life", caller: func(life context.Context) (context.Context, func()) { return life, nil }},
		{name: "a value of the gateway's life", caller: func(life context.Context) (context.Context, func()) {
			return context.WithValue(life, struct{}{}, 1), nil
		}},
		{name: "a POST's", caller: func(life context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(life)
			return ctx, func() { cancel(errGone) }
		}},
		{name: "another's", caller: func(context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(context.Background())
			return ctx, func() { cancel(errGone) }
		}},
		{name: "the gateway's life, in a request it did not begin", named: true,
			caller: func(life context.Context) (context.Context, func()) { return life, nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := reach.New(nil)
			life, stop := context.WithCancelCause(context.Background())
			defer stop(nil)
			q := NewOwned(life, rt, time.Minute, Budgets{Default: &reach.Budget{}})
			defer q.EndAll()
			var target Target
			if tc.named {
				// Begun by someone else, in another context.
				_, r, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "theirs", Principal: LocalPrincipal})
				if err != nil {
					t.Fatal(err)
				}
				defer r.End()
				target.Request = r.ID()
			}
			caller, end := tc.caller(life)
			if end == nil {
				end = func() { stop(errGone) }
			}
			cctx, cancel, _, done, err := q.CancelableCallContext(caller, target, q.NewSession())
			if err != nil {
				t.Fatal(err)
			}
			defer done.Done()
			if cctx.Err() != nil {
				t.Fatalf("the call's context ended at once: %v", context.Cause(cctx))
			}
			end()
			select {
			case <-cctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the call's context did not end with its caller's")
			}
			if c := context.Cause(cctx); c != errGone {
				t.Errorf("cause %v, want the caller's", c)
			}
			cancel(errors.New("too late")) // changes nothing once ended
			if c := context.Cause(cctx); c != errGone {
				t.Errorf("cause %v after cancel, want the caller's", c)
			}
		})
	}
	t.Run("request ends, cancel, done", func(t *testing.T) {
		rt := reach.New(nil)
		q := NewOwned(t.Context(), rt, time.Minute, Budgets{Default: &reach.Budget{}})
		defer q.EndAll()
		s := q.NewSession()
		cctx, _, r, done, err := q.CancelableCallContext(t.Context(), Target{}, s)
		if err != nil {
			t.Fatal(err)
		}
		q.End(r.ID())
		if cctx.Err() == nil {
			t.Error("the call's context did not end with its request")
		}
		done.Done()
		errMine := errors.New("mine")
		cctx, cancel, _, done, err := q.CancelableCallContext(t.Context(), Target{}, s)
		if err != nil {
			t.Fatal(err)
		}
		cancel(errMine)
		if c := context.Cause(cctx); c != errMine {
			t.Errorf("cause %v, want the cancel's", c)
		}
		done.Done()
		cctx, _, _, done, err = q.CancelableCallContext(t.Context(), Target{}, s)
		if err != nil {
			t.Fatal(err)
		}
		done.Done()
		if cctx.Err() == nil {
			t.Error("the call's context did not end once done")
		}
	})
}
