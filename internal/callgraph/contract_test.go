package callgraph

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/fault"
)

func TestCheckContract(t *testing.T) {
	var re Reentrancy
	var on Mode
	if err := CheckContract("tool x", &re, &on, false, "keyed needs key"); err != nil || re != NonReentrant || on != Refuse {
		t.Fatalf("defaults: %v, %q, %q", err, re, on)
	}
	re, on = Keyed, Warn
	if err := CheckContract("tool x", &re, &on, false, "keyed needs key"); err == nil || err.Error() != "tool x: keyed needs key" {
		t.Fatalf("keyed without a key: %v", err)
	}
	if err := CheckContract("tool x", &re, &on, true, ""); err != nil || on != Warn {
		t.Fatalf("keyed with a key: %v, %q", err, on)
	}
	re, on = "sometimes", ""
	if err := CheckContract("delegate to y", &re, &on, false, ""); err == nil || !strings.HasPrefix(err.Error(), `delegate to y: unknown reentrancy "sometimes"`) {
		t.Fatalf("unknown reentrancy: %v", err)
	}
	re, on = Reentrant, "loud"
	if err := CheckContract("tool x", &re, &on, false, ""); err == nil || !strings.Contains(err.Error(), "want refuse, warn or allow") {
		t.Fatalf("unknown mode: %v", err)
	}
}

func TestGraphRefusals(t *testing.T) {
	e := CycleError("search", `{"q":"a"}`, 2, "plan")
	if e.Code != "cycle" || e.Type != fault.TypeCycle || !errors.Is(e, fault.ErrRefused) ||
		e.Message != `This would create a cycle: search {"q":"a"} is already on your call stack at depth 2 (called by plan).` {
		t.Fatalf("cycle: %+v", e)
	}
	e = ReentryError("db.tx", 1, "the main agent")
	if e.Code != "reentrancy" || !strings.Contains(e.Message, "depth 1 (called by the main agent) and is not reentrant") {
		t.Fatalf("reentry: %+v", e)
	}
	e = KeyedError("lock", []string{"id"}, []byte(`{"id":"7","x":1}`), 3, "plan")
	if e.Code != "keyed_reentrancy" || !strings.Contains(e.Message, `lock with id="7" is already running`) || !strings.Contains(e.Suggestion, "a different id") {
		t.Fatalf("keyed: %+v", e)
	}
}

func TestAgentRefusals(t *testing.T) {
	e := AgentCycleError("billing", `"refund 7"`, "main")
	if e.Code != "delegation_cycle" || e.Type != fault.TypeCycle ||
		!strings.Contains(e.Message, `agent billing is already working on "refund 7" up the delegation stack (handed to it by the main agent)`) {
		t.Fatalf("cycle: %+v", e)
	}
	e = AgentReentryError("billing", "it made the request this hand-off belongs to")
	if e.Code != "agent_reentrancy" || !strings.Contains(e.Message, "(it made the request this hand-off belongs to) and is not reentrant") ||
		!strings.Contains(e.Suggestion, "let billing continue") {
		t.Fatalf("reentry: %+v", e)
	}
	e = AgentKeyedError("billing", []string{"account"}, []byte(`{"account":"a1"}`), "where")
	if e.Code != "agent_keyed_reentrancy" || !strings.Contains(e.Message, `working with account="a1"`) || !strings.Contains(e.Message, "a different account.") {
		t.Fatalf("keyed: %+v", e)
	}
}
