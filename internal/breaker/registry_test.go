package breaker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

type req struct{ id string }

type reqKey struct{}

func newTestRegistry(changes *[]string) *Registry[*req] {
	return NewRegistry(&Policy{Failures: 2}, Hooks[*req]{
		RequestOf: func(ctx context.Context) *req { r, _ := ctx.Value(reqKey{}).(*req); return r },
		Describe:  func(err error) string { return "masked: " + err.Error() },
		Changed: func(b *Named[*req], r *req, c *Change) {
			id := ""
			if r != nil {
				id = r.id
			}
			*changes = append(*changes, c.Kind+":"+c.Name+" "+c.To.String()+" by "+id+" ("+c.Reason+")")
		},
	})
}

// TestRegistryKeepsOneBreakerPerName: a breaker is made once per kind and
// name; a policy given with set replaces its own, one given without does
// not; Statuses lists them sorted by kind and name.
func TestRegistryKeepsOneBreakerPerName(t *testing.T) {
	var changes []string
	g := newTestRegistry(&changes)
	a := g.Get("tool", "b", nil, true)
	if g.Get("tool", "b", &Policy{Failures: 1}, false) != a {
		t.Fatal("a second Get made another breaker")
	}
	g.Get("upstream", "a", nil, false)
	g.Get("tool", "a", nil, false)
	var got []string
	for _, s := range g.Statuses() {
		got = append(got, s.Kind+":"+s.Name)
	}
	if want := "[tool:a tool:b upstream:a]"; fmt.Sprint(got) != want {
		t.Fatalf("Statuses = %v, want %s", got, want)
	}
	// The registry's default (2 failures) held: one failure leaves it closed.
	p, _ := a.Let(&req{id: "r1"})
	p.Failed(errors.New("HTTP 503"))
	if a.State() != Closed {
		t.Fatalf("after one failure of two: %s", a.State())
	}
	g.Get("tool", "b", &Policy{Failures: 1}, true)
	p, _ = a.Let(&req{id: "r2"})
	p.Failed(errors.New("HTTP 502"))
	if a.State() != Open || len(changes) != 1 || changes[0] != "tool:b open by r2 (2 transient failures in a row since "+a.Status().FailingSince.UTC().Format(time.RFC3339)+", the last: masked: HTTP 502)" {
		t.Fatalf("after the policy of 1 failure: %s, changes %q", a.State(), changes)
	}
	// Admit finds the request in the context and refuses with the status.
	_, e := a.Admit(context.WithValue(context.Background(), reqKey{}, &req{id: "r3"}))
	if e == nil || e.Code != "breaker_open" || e.Type != "unavailable" || e.Guard != "breaker" {
		t.Fatalf("Admit of an open breaker = %+v", e)
	}
}

// TestLetBothFreesTheToolsProbe: when the upstream's breaker is open, the
// tool's probe that was let through is given back, so that the tool's
// next call may probe.
func TestLetBothFreesTheToolsProbe(t *testing.T) {
	var changes []string
	g := newTestRegistry(&changes)
	tool, up := g.Get("tool", "kb__search", &Policy{Failures: 1, OpenFor: time.Millisecond}, true), g.Get("upstream", "kb", &Policy{Failures: 1, OpenFor: time.Hour}, true)
	for _, b := range []*Named[*req]{tool, up} {
		p, _ := b.Let(nil)
		p.Failed(errors.New("down"))
	}
	time.Sleep(2 * time.Millisecond) // the tool's probe interval passes
	ps, open, s := LetBoth(tool, up, &req{id: "r"})
	if open != up || s == nil || s.State != Open {
		t.Fatalf("LetBoth = %v, %v: want the upstream's open status", open, s)
	}
	ps.Abandon() // a zero pair reports nothing
	if st := tool.Status(); st.State != HalfOpen || st.Probing {
		t.Fatalf("the tool's breaker after the upstream refused: %+v; want half-open with its probe free", st)
	}
	// A nil upstream lets everything through; the pair reports to the tool.
	ps, open, _ = LetBoth(tool, nil, &req{id: "r"})
	if open != nil {
		t.Fatalf("LetBoth(tool, nil) refused by %v", open)
	}
	ps.Succeeded(time.Now())
	if tool.State() != Closed {
		t.Fatalf("the probe's success left the tool's breaker %s", tool.State())
	}
}

// TestRefusalTellsTheLastFailureToItsOwner: with Hooks.Owner, an open
// breaker's status as Let returns it (and so its refusal) has the last
// failure for the owner of the call that failed only; for another owner
// it says that the breaker fails, not what that call said. The breaker's
// own status (the views') keeps it, and whose it is.
func TestRefusalTellsTheLastFailureToItsOwner(t *testing.T) {
	g := NewRegistry(&Policy{Failures: 1, OpenFor: time.Hour}, Hooks[*req]{
		RequestOf: func(ctx context.Context) *req { r, _ := ctx.Value(reqKey{}).(*req); return r },
		Owner: func(r *req) string {
			if r == nil {
				return ""
			}
			owner, _, _ := strings.Cut(r.id, "/")
			return owner
		},
	})
	b := g.Get("tool", "crm", nil, false)
	p, _ := b.Let(&req{id: "acme/1"})
	p.Failed(errors.New("no account ACME-7"))
	if st := b.Status(); st.State != Open || st.LastError != "no account ACME-7" || st.LastBy != "acme" {
		t.Fatalf("status after the failure: %+v", st)
	}
	for who, want := range map[string]string{"acme/2": "no account ACME-7", "globex/1": "", "": ""} {
		r := &req{id: who}
		if who == "" {
			r = nil
		}
		if _, s := b.Let(r); s == nil || s.LastError != want || s.LastBy != "acme" {
			t.Errorf("Let(%q): %+v, want the open status with last error %q", who, s, want)
		}
		ctx := context.WithValue(context.Background(), reqKey{}, r)
		if _, e := b.Admit(ctx); e == nil || strings.Contains(e.Message, "ACME-7") != (want != "") {
			t.Errorf("Admit(%q) = %+v, want the last failure told %v", who, e, want != "")
		}
	}
	if st := b.Status(); st.LastError != "no account ACME-7" {
		t.Errorf("the breaker's status after the refusals: %+v, want its last error kept", st)
	}
}
