package link

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// TestArgsKey: arguments that differ in key order, spacing, number
// spelling or top-level nulls are the same call; others are not.
func TestArgsKey(t *testing.T) {
	same := [][]string{
		{`{"a":1,"b":"x"}`, ` { "b" : "x", "a" : 1.0 } `, `{"a":1,"b":"x","c":null}`},
		{``, `null`, `{}`, `{"z":null}`},
	}
	for _, group := range same {
		want, ok := ArgsKey([]byte(group[0]))
		if !ok {
			t.Fatalf("ArgsKey(%s) failed", group[0])
		}
		for _, in := range group[1:] {
			if got, ok := ArgsKey([]byte(in)); !ok || got != want {
				t.Errorf("ArgsKey(%s) = %q, want %q", in, got, want)
			}
		}
	}
	a, _ := ArgsKey([]byte(`{"a":{"b":null}}`))
	b, _ := ArgsKey([]byte(`{"a":{}}`))
	if a == b {
		t.Errorf("a nested null was left out: %q", a)
	}
	for _, bad := range []string{`[1]`, `"x"`, `{"a":`, `{"a":1,"a":2}`} {
		if _, ok := ArgsKey([]byte(bad)); ok {
			t.Errorf("ArgsKey(%s) succeeded", bad)
		}
	}
}

func TestNameMatches(t *testing.T) {
	for _, tc := range []struct {
		chosen, tool string
		want         bool
	}{
		{"up__echo", "up__echo", true},
		{"reach__up__echo", "up__echo", true},
		{"mcp.up__echo", "up__echo", true},
		{"xup__echo", "up__echo", false},
		{"echo", "up__echo", false},
	} {
		if got := NameMatches(tc.chosen, tc.tool); got != tc.want {
			t.Errorf("NameMatches(%q, %q) = %v", tc.chosen, tc.tool, got)
		}
	}
}

// TestMatch: a call matches the turn that chose it once per choice; when
// turns of two requests chose the same call and both were answered,
// neither is matched unless one is preferred; a call of another
// principal's turn never is.
func TestMatch(t *testing.T) {
	rt := reach.New(nil)
	turn := func(id string) *reach.Frame { return turnOf(t, rt, id, LocalPrincipal) }
	var c ModelChoices
	if f, _ := c.Match("t", []byte(`{}`), nil, ""); f != nil {
		t.Fatal("matched with nothing recorded")
	}
	a := turn("a")
	c.RecordCall(a, "call_1", "srv__t", []byte(`{"q":1}`))
	if f, id := c.Match("t", []byte(`{ "q": 1 }`), nil, ""); f != a || id != "call_1" {
		t.Errorf("Match = %v, %q; want turn a, call_1", f, id)
	}
	if f, _ := c.Match("u", []byte(`{"q":1}`), nil, ""); f != nil {
		t.Errorf("another tool matched")
	}
	b := turn("b")
	c.RecordCall(b, "call_2", "t", []byte(`{"q":1}`))
	if f, _ := c.Match("t", []byte(`{"q":1}`), nil, ""); f != b {
		t.Errorf("Match = %v, want b's turn, the one whose choice waits", f)
	}
	if f, _ := c.Match("t", []byte(`{"q":1}`), nil, ""); f != nil {
		t.Errorf("an ambiguous call matched request %s", f.Request.ID())
	}
	if f, _ := c.Match("t", []byte(`{"q":1}`), nil, "b"); f != b {
		t.Errorf("the preferred request's turn was not matched: %v", f)
	}
	b.Request.End()
	if f, _ := c.Match("t", []byte(`{"q":1}`), nil, ""); f != a {
		t.Errorf("with b ended, Match = %v, want a's turn", f)
	}
	bob := turnOf(t, rt, "bob's", "bob")
	c.RecordCall(bob, "call_3", "t", []byte(`{"q":2}`))
	if f, _ := c.Match("t", []byte(`{"q":2}`), nil, ""); f != nil {
		t.Errorf("the local user's call matched bob's turn")
	}
}

// turnOf begins a request id of principal and a model turn in it.
func turnOf(t *testing.T, rt *reach.Runtime, id, principal string) *reach.Frame {
	t.Helper()
	ctx, _, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: id, Principal: principal})
	if err != nil {
		t.Fatal(err)
	}
	_, f, err := rt.BeginModel(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestResponded: an answer's id leads back to the turn that gave it, for
// its principal only and while its request runs; the newest 10,000 are
// kept.
func TestResponded(t *testing.T) {
	rt := reach.New(nil)
	var c ModelChoices
	a := turnOf(t, rt, "a", LocalPrincipal)
	c.RecordResponse("resp_a", a)
	if f := c.Responded("resp_a", nil); f != a {
		t.Errorf("Responded(resp_a) = %v, want a's turn", f)
	}
	if f := c.Responded("resp_x", nil); f != nil {
		t.Errorf("an unknown answer led to %v", f)
	}
	bob := turnOf(t, rt, "bob's", "bob")
	c.RecordResponse("resp_bob", bob)
	if f := c.Responded("resp_bob", nil); f != nil {
		t.Errorf("the local user's turn joined bob's request %s", f.Request.ID())
	}
	a.Request.End()
	if f := c.Responded("resp_a", nil); f != nil {
		t.Errorf("an ended request's answer led to %v", f)
	}
	if f := c.Answered("resp_a", nil); f != a {
		t.Errorf("Answered(resp_a), its request ended, = %v, want a's turn", f)
	}
	if f := c.Answered("resp_bob", nil); f != nil {
		t.Errorf("the local user was answered bob's turn %v", f)
	}
	b := turnOf(t, rt, "b", LocalPrincipal)
	for i := range maxResponses {
		c.RecordResponse(fmt.Sprint("resp_", i), b)
	}
	if len(c.responses) > maxResponses || c.Responded("resp_0", nil) != nil || c.Responded(fmt.Sprint("resp_", maxResponses-1), nil) != b {
		t.Errorf("%d answers kept, want the newest %d", len(c.responses), maxResponses)
	}
	if f := c.Answered("resp_bob", &auth.Identity{Principal: "bob"}); f != bob {
		t.Errorf("bob's one answer after the local user's %d: %v, want kept (the one holding the most gives way)", maxResponses, f)
	}
}

// TestChoicesKeptPerPrincipal: the tool calls models chose (by id and by
// arguments) and the Responses answers were single lists for every
// principal, the newest 10,000 each: bob, flooding them with his own
// turns' calls, pushed out alice's, and her MCP calls then ran apart from
// her turns (her run split in two for its budget and loop guard). Past a
// bound the principal holding the most gives way; the total stays bounded.
func TestChoicesKeptPerPrincipal(t *testing.T) {
	rt := reach.New(nil)
	var c ModelChoices
	alice := &auth.Identity{Principal: "alice", Tenant: "acme"}
	at := func(id, principal string) *reach.Frame {
		t.Helper()
		ctx, _, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: id, Principal: principal, Tenant: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		_, f, err := rt.BeginModel(ctx, "m")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a := at("alice-run", "alice")
	c.RecordCall(a, "call_alice", "get_order", []byte(`{"order_id":"1001"}`))
	c.RecordResponse("resp_alice", a)
	bob := at("bob-run", "bob")
	const flood = 3 * maxChoices
	for i := range flood {
		c.RecordCall(bob, fmt.Sprint("call_", i), "get_order", fmt.Appendf(nil, `{"order_id":"%d"}`, i))
		c.RecordResponse(fmt.Sprint("resp_", i), bob)
	}
	if f := c.Turn("call_alice", "", alice); f != a {
		t.Errorf("alice's tool call id after bob's %d: %v, want her turn", flood, f)
	}
	if f := c.Continued([]string{"call_alice"}, alice); f != a {
		t.Errorf("alice's conversation after bob's %d: %v, want her turn", flood, f)
	}
	if f, id := c.Match("get_order", []byte(`{"order_id":"1001"}`), alice, ""); f != a || id != "call_alice" {
		t.Errorf("alice's call by its arguments after bob's %d: %v, %q; want her turn, call_alice", flood, f, id)
	}
	if f := c.Responded("resp_alice", alice); f != a {
		t.Errorf("alice's Responses answer after bob's %d: %v, want her turn", flood, f)
	}
	if len(c.m) > 10000 || len(c.responses) > maxResponses || c.argOrder.total > maxChoices {
		t.Errorf("kept %d ids, %d answers, %d choices; want at most 10000, %d, %d", len(c.m), len(c.responses), c.argOrder.total, maxResponses, maxChoices)
	}
	bobs := &auth.Identity{Principal: "bob", Tenant: "acme"}
	if c.Turn("call_0", "", bobs) != nil || c.Turn(fmt.Sprint("call_", flood-1), "", bobs) != bob {
		t.Error("bob's oldest call id kept or his newest forgotten")
	}
}

// TestMatchRunAgain: an agent run again with the same question within
// ChoiceWindow, while the first run's request has not ended (nothing ends
// a framework's run but idle_gap), chooses the same call; the first run's
// choice was answered by its own call, so the new run's call is the new
// run's turn's, not ambiguous: unlinked, it ran in a request of its
// client's (a sessionless client's: the first run's) apart from its turns.
// Two runs that both wait for their call stay ambiguous.
func TestMatchRunAgain(t *testing.T) {
	rt := reach.New(nil)
	var c ModelChoices
	a := turnOf(t, rt, "a", LocalPrincipal)
	c.RecordCall(a, "call_a", "get_order", []byte(`{"order_id":"1001"}`))
	if f, _ := c.Match("get_order", []byte(`{"order_id":"1001"}`), nil, ""); f != a {
		t.Fatalf("the first run's call matched %v, want a's turn", f)
	}
	b := turnOf(t, rt, "b", LocalPrincipal)
	c.RecordCall(b, "call_b", "get_order", []byte(`{"order_id":"1001"}`))
	if f, id := c.Match("get_order", []byte(`{"order_id":"1001"}`), nil, ""); f != b || id != "call_b" {
		t.Errorf("the second run's call matched %v, %q; want b's turn, call_b", f, id)
	}
	d := turnOf(t, rt, "d", LocalPrincipal)
	c.RecordCall(d, "call_d", "get_order", []byte(`{"order_id":"1001"}`))
	e := turnOf(t, rt, "e", LocalPrincipal)
	c.RecordCall(e, "call_e", "get_order", []byte(`{"order_id":"1001"}`))
	if f, _ := c.Match("get_order", []byte(`{"order_id":"1001"}`), nil, ""); f != nil {
		t.Errorf("a call two waiting runs chose matched request %s", f.Request.ID())
	}
}
