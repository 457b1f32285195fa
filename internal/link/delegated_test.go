package link

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// TestDelegated: a conversation that begins with a string a running turn's
// tool call was given (a sub-agent that tool runs in the agent's process)
// leads back to that turn: for its principal only, while its request runs;
// when turns of two requests gave the same task, the one whose sub-agent
// has not begun wins, and none when both wait; a string nobody gave, or an
// argument that is not a string, leads nowhere; the memory is bounded.
func TestDelegated(t *testing.T) {
	rt := reach.New(nil)
	var c ModelChoices
	if f := c.Delegated("anything", nil); f != nil {
		t.Fatal("found a turn with nothing recorded")
	}
	a := turnOf(t, rt, "a", LocalPrincipal)
	c.RecordCall(a, "call_1", "researcher", []byte(`{"input":"  find the refund policy ","n":3,"deep":{"q":"nested"}}`))
	if f := c.Delegated("find the refund policy", nil); f != a {
		t.Errorf("Delegated = %v, want turn a", f)
	}
	for _, other := range []string{"find the refund", "3", "nested", ""} {
		if f := c.Delegated(other, nil); f != nil {
			t.Errorf("Delegated(%q) = %v, want none", other, f)
		}
	}
	if f := c.Delegated("find the refund policy", &auth.Identity{Principal: "bob"}); f != nil {
		t.Errorf("bob's conversation joined the local user's request %s", f.Request.ID())
	}
	if h := c.Handed("find the refund policy", &auth.Identity{Principal: LocalPrincipal, Tenant: "acme"}); h != nil {
		t.Errorf("the conversation of a principal of the same name in another tenant joined request %s", h.Turn.Request.ID())
	}
	// b's turn gives the same task: a's sub-agent began, b's waits.
	b := turnOf(t, rt, "b", LocalPrincipal)
	c.RecordCall(b, "call_2", "researcher", []byte(`{"input":"find the refund policy"}`))
	if f := c.Delegated("find the refund policy", nil); f != b {
		t.Errorf("Delegated with a's sub-agent begun = %v, want turn b", f)
	}
	// Both begun: ambiguous.
	if f := c.Delegated("find the refund policy", nil); f != nil {
		t.Errorf("Delegated with both begun = %v, want none", f)
	}
	b.Request.End()
	if f := c.Delegated("find the refund policy", nil); f != a {
		t.Errorf("Delegated with b's request ended = %v, want turn a", f)
	}
	a.Request.End()
	if f := c.Delegated("find the refund policy", nil); f != nil {
		t.Errorf("Delegated with both requests ended = %v, want none", f)
	}
	long := strings.Repeat("x", maxTask+1)
	d := turnOf(t, rt, "d", LocalPrincipal)
	c.RecordCall(d, "call_3", "researcher", []byte(`{"input":"`+long+`"}`))
	if f := c.Delegated(long, nil); f != nil {
		t.Errorf("a task longer than %d bytes was remembered", maxTask)
	}
	for i := range maxChoices + 10 {
		c.RecordCall(d, fmt.Sprint("call_x", i), "t", []byte(fmt.Sprintf(`{"q":"task %d"}`, i)))
	}
	if len(c.byTask) > maxChoices || c.Delegated("task 0", nil) != nil || c.Delegated(fmt.Sprint("task ", maxChoices+9), nil) != d {
		t.Errorf("%d tasks kept, want the newest %d", len(c.byTask), maxChoices)
	}
}
