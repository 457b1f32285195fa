package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// testHandedTasks: a task handed is found by its digest for its principal
// and tenant only, until it expires; a write deletes the expired and
// keeps no more than most of the principal's (the oldest go), not
// touching another principal's; a record put again replaces its own; one
// of a request that is not running is not found.
func testHandedTasks(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	t0 := time.Unix(1_800_000_000, 0)
	for _, id := range []string{"r1", "r2", "r9", "rm", "rx"} {
		if err := s.PutRequest(ctx, &store.Request{ID: id, Principal: "alice", State: "running", Started: t0}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(at time.Time, most int, ts ...*store.HandedTask) {
		t.Helper()
		for _, h := range ts {
			h.Created, h.Expires = at, at.Add(2*time.Minute)
		}
		if err := s.PutHandedTasks(ctx, ts, most); err != nil {
			t.Fatal(err)
		}
	}
	get := func(p, tn, d string, at time.Time) string {
		t.Helper()
		hs, err := s.HandedTasks(ctx, p, tn, d, at)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hs {
			if h.Principal != p || h.Tenant != tn || h.Digest != d {
				t.Fatalf("HandedTasks(%s, %s, %s) returned %+v", p, tn, d, h)
			}
			out = append(out, h.Request+"/"+h.Frame+"/"+h.Tool+string(h.Stack))
		}
		return fmt.Sprint(out)
	}
	put(t0, 100, &store.HandedTask{Digest: "d1", Principal: "alice", Request: "r1", Frame: "f1", Tool: "research", Stack: []byte("[1]")},
		&store.HandedTask{Digest: "d2", Principal: "alice", Request: "r1", Frame: "f1", Tool: "research"})
	if got := get("alice", "", "d1", t0); got != "[r1/f1/research[1]]" {
		t.Errorf("alice's d1: %s", got)
	}
	if got := get("bob", "", "d1", t0); got != "[]" {
		t.Errorf("bob's d1: %s, want none (alice's)", got)
	}
	if got := get("alice", "acme", "d1", t0); got != "[]" {
		t.Errorf("alice of acme's d1: %s, want none (alice of no tenant's)", got)
	}
	// Another request's turn handed d1 later: both, the newest first; the
	// first request's again replaces its own.
	put(t0.Add(time.Second), 100, &store.HandedTask{Digest: "d1", Principal: "alice", Request: "r2", Frame: "f2", Tool: "writer"})
	put(t0.Add(2*time.Second), 100, &store.HandedTask{Digest: "d1", Principal: "alice", Request: "r1", Frame: "f3", Tool: "research"})
	if got := get("alice", "", "d1", t0.Add(2*time.Second)); got != "[r1/f3/research r2/f2/writer]" {
		t.Errorf("alice's d1 after two more turns: %s", got)
	}
	// A request not running: its record is not found.
	put(t0.Add(2*time.Second), 100, &store.HandedTask{Digest: "d3", Principal: "alice", Request: "rx", Frame: "fx"})
	if got := get("alice", "", "d3", t0.Add(2*time.Second)); got != "[rx/fx/]" {
		t.Errorf("alice's d3: %s", got)
	}
	if err := s.PutRequest(ctx, &store.Request{ID: "rx", Principal: "alice", State: "ended", Started: t0, Ended: t0.Add(3 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if got := get("alice", "", "d3", t0.Add(3*time.Second)); got != "[]" {
		t.Errorf("alice's d3 once its request ended: %s, want none", got)
	}
	// Expired: not found, and the next write deletes it.
	if got := get("alice", "", "d2", t0.Add(2*time.Minute)); got != "[]" {
		t.Errorf("alice's d2 at its expiry: %s, want none", got)
	}
	put(t0.Add(3*time.Minute), 100, &store.HandedTask{Digest: "d9", Principal: "carol", Request: "r9", Frame: "f9"})
	if got := get("alice", "", "d2", t0); got != "[]" {
		t.Errorf("alice's d2 read as of before its expiry after a later write: %s, want it deleted", got)
	}
	// A principal past the bound keeps its newest most; another's stay.
	at := t0.Add(4 * time.Minute)
	for i := range 5 {
		put(at.Add(time.Duration(i)*time.Millisecond), 3, &store.HandedTask{Digest: fmt.Sprintf("m%d", i), Principal: "mallory", Request: "rm", Frame: "fm"})
	}
	now := at.Add(10 * time.Millisecond)
	for i := range 5 {
		got := get("mallory", "", fmt.Sprintf("m%d", i), now)
		if want := i >= 2; (got != "[]") != want {
			t.Errorf("mallory's m%d after five puts bounded to 3: %s, want kept %v", i, got, want)
		}
	}
	if got := get("carol", "", "d9", now); got != "[r9/f9/]" {
		t.Errorf("carol's d9 after mallory's puts: %s, want kept", got)
	}
}

// testHandedTaskClaim: a claim takes the one record of a task one
// request's turn handed, each time (the sub-agent begun again joins its
// sub-request); of several requests', the one not used yet, once, and
// none when several or none wait; another principal's never; the
// sub-request recorded is returned with it, set only over the one
// expected, found by its turn; a record put again is unused, with no
// sub-request.
func testHandedTaskClaim(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	t0 := time.Unix(1_800_000_000, 0)
	for _, id := range []string{"r1", "r2", "r3"} {
		if err := s.PutRequest(ctx, &store.Request{ID: id, Principal: "alice", State: "running", Started: t0}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(req, frame string) {
		t.Helper()
		if err := s.PutHandedTasks(ctx, []*store.HandedTask{{Digest: "d", Principal: "alice", Request: req, Frame: frame, Tool: "research",
			Created: t0, Expires: t0.Add(2 * time.Minute)}}, 100); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(p string) string {
		t.Helper()
		h, err := s.ClaimHandedTask(ctx, p, "", "d", t0)
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			return "none"
		}
		return h.Request + "/" + h.Frame + "/" + h.Sub
	}
	put("r1", "f1")
	for range 2 {
		if got := claim("alice"); got != "r1/f1/" {
			t.Fatalf("claim of one request's task: %s, want r1/f1/", got)
		}
	}
	if got := claim("bob"); got != "none" {
		t.Fatalf("bob's claim of alice's task: %s", got)
	}
	if ok, err := s.SetHandedSub(ctx, "d", "r1", 0, "", "s1"); err != nil || !ok {
		t.Fatalf("SetHandedSub = %v, %v", ok, err)
	}
	if ok, err := s.SetHandedSub(ctx, "d", "r1", 0, "", "s9"); err != nil || ok {
		t.Fatalf("SetHandedSub over another = %v, %v; want not set", ok, err)
	}
	if got := claim("alice"); got != "r1/f1/s1" {
		t.Fatalf("claim after the sub-request was recorded: %s", got)
	}
	if subs, err := s.HandedSubs(ctx, "r1", "f1"); err != nil || fmt.Sprint(subs) != "[s1]" {
		t.Fatalf("HandedSubs(r1, f1) = %v, %v", subs, err)
	}
	// r2's turn hands it too: r2's, not used yet, is taken, once; then
	// none waits and none is guessed.
	put("r2", "f2")
	if got := claim("alice"); got != "r2/f2/" {
		t.Fatalf("claim with r1's used and r2's waiting: %s", got)
	}
	if got := claim("alice"); got != "none" {
		t.Fatalf("claim with both used: %s, want none", got)
	}
	// r1's next turn hands it again: unused, no sub-request; with r3's
	// waiting too, none.
	put("r1", "f3")
	put("r3", "f4")
	if got := claim("alice"); got != "none" {
		t.Fatalf("claim with r1's and r3's waiting: %s, want none", got)
	}
	if subs, err := s.HandedSubs(ctx, "r1", "f1"); err != nil || len(subs) != 0 {
		t.Fatalf("HandedSubs(r1, f1) after r1's record was put again = %v, %v", subs, err)
	}
}

// testHandedTaskCalls: a turn that handed one task in two calls keeps a
// record of each (its Nth): claims take the one not used yet of the
// lowest Nth, then the first again once both are used; the sub-request
// begun from each is its own; put by two writes (a streamed turn), both
// stay; a later turn of the request replaces both. Before, one record a
// digest and request: the second sub-agent's claim took the first's
// record, and joined its sub-request.
func testHandedTaskCalls(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	t0 := time.Unix(1_800_000_000, 0)
	if err := s.PutRequest(ctx, &store.Request{ID: "r1", Principal: "alice", State: "running", Started: t0}); err != nil {
		t.Fatal(err)
	}
	row := func(frame string, nth int) *store.HandedTask {
		return &store.HandedTask{Digest: "d", Principal: "alice", Request: "r1", Frame: frame, Tool: "research", Nth: nth,
			Created: t0, Expires: t0.Add(2 * time.Minute)}
	}
	claim := func() string {
		t.Helper()
		h, err := s.ClaimHandedTask(ctx, "alice", "", "d", t0)
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			return "none"
		}
		return fmt.Sprintf("%s/%d/%s", h.Frame, h.Nth, h.Sub)
	}
	// Two writes, as a streamed turn's calls are put one by one.
	for nth := range 2 {
		if err := s.PutHandedTasks(ctx, []*store.HandedTask{row("f1", nth)}, 100); err != nil {
			t.Fatal(err)
		}
	}
	if got := claim(); got != "f1/0/" {
		t.Fatalf("first claim: %s, want f1/0/", got)
	}
	if ok, err := s.SetHandedSub(ctx, "d", "r1", 0, "", "s1"); err != nil || !ok {
		t.Fatalf("SetHandedSub(0) = %v, %v", ok, err)
	}
	if got := claim(); got != "f1/1/" {
		t.Fatalf("second claim (the second call's sub-agent): %s, want f1/1/ (its own record, no sub-request)", got)
	}
	if ok, err := s.SetHandedSub(ctx, "d", "r1", 1, "", "s2"); err != nil || !ok {
		t.Fatalf("SetHandedSub(1) = %v, %v", ok, err)
	}
	if got := claim(); got != "f1/0/s1" {
		t.Fatalf("a claim with both used: %s, want f1/0/s1", got)
	}
	if subs, err := s.HandedSubs(ctx, "r1", "f1"); err != nil || fmt.Sprint(subs) != "[s1 s2]" && fmt.Sprint(subs) != "[s2 s1]" {
		t.Fatalf("HandedSubs(r1, f1) = %v, %v; want s1 and s2", subs, err)
	}
	// The request's next turn hands it once: its one record replaces both.
	if err := s.PutHandedTasks(ctx, []*store.HandedTask{row("f2", 0)}, 100); err != nil {
		t.Fatal(err)
	}
	if hs, err := s.HandedTasks(ctx, "alice", "", "d", t0); err != nil || len(hs) != 1 || hs[0].Frame != "f2" {
		t.Fatalf("records after the next turn: %d, %v; want f2's alone", len(hs), err)
	}
	if got := claim(); got != "f2/0/" {
		t.Fatalf("claim after the next turn: %s, want f2/0/", got)
	}
}
