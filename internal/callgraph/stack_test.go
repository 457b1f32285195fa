package callgraph

import (
	"strconv"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/frames"
)

// tframe is a frame of a test's stack.
type tframe struct {
	up      *tframe
	kind    frames.Kind
	name    string
	args    string
	refused bool
	mark    Mark
	handed  string
}

func tnode(f *tframe) Node[*tframe] {
	return Node[*tframe]{Up: f.up, Kind: f.kind, Name: f.name, Agent: "main", Args: []byte(f.args), Depth: depth(f),
		Live: !f.refused, Mark: &f.mark, Handed: f.handed}
}

func depth(f *tframe) int {
	n := 0
	for ; f != nil; f = f.up {
		n++
	}
	return n
}

// call pushes a call of tool with args under up, as the graph stage does.
func call(up *tframe, tool, args string, re Reentrancy, key ...string) *tframe {
	f := &tframe{up: up, kind: frames.Tool, name: tool, args: args}
	if up != nil {
		f.mark.Filter = up.mark.Filter
	}
	f.mark.Tool(tool, []byte(f.args), re, key)
	return f
}

func seal(f *tframe) *tframe { f.mark.Seal(NameHash(f.name)); return f }

// TestCheckTool: a cycle, a re-entry of a non-reentrant tool and a keyed
// re-entry with the same key are refused, naming the ancestor and who
// called it; other calls, and refused ancestors, pass.
func TestCheckTool(t *testing.T) {
	root := seal(call(nil, "plan", `{"q":1}`, Reentrant))
	db := seal(call(root, "db", `{"id":1}`, NonReentrant))
	acct := seal(call(db, "acct", `{"id":7,"x":1}`, Keyed, "id"))
	for i, c := range []struct {
		f        *tframe
		re       Reentrancy
		key      []string
		hit      *tframe
		code, by string
	}{
		{call(acct, "plan", `{"q":1}`, Reentrant), Reentrant, nil, root, "cycle", "the main agent"},
		{call(acct, "plan", `{"q":2}`, Reentrant), Reentrant, nil, nil, "", ""},
		{call(acct, "db", `{"id":2}`, NonReentrant), NonReentrant, nil, db, "reentrancy", "plan"},
		{call(acct, "acct", `{"id":7,"x":2}`, Keyed, "id"), Keyed, []string{"id"}, acct, "keyed_reentrancy", "db"},
		{call(acct, "acct", `{"id":8,"x":1}`, Keyed, "id"), Keyed, []string{"id"}, nil, "", ""},
		{call(nil, "db", `{}`, NonReentrant), NonReentrant, nil, nil, "", ""},
	} {
		hit, e := CheckTool(tnode, c.f, c.re, c.key, NameHash(c.f.name))
		switch {
		case hit != c.hit:
			t.Errorf("%d: %s hit %v, want %v", i, c.f.name, hit, c.hit)
		case (e == nil) != (c.code == ""):
			t.Errorf("%d: %s: %v, want %q", i, c.f.name, e, c.code)
		case e != nil && (e.Code != c.code || !strings.Contains(e.Message, "called by "+c.by)):
			t.Errorf("%d: %s: %s %q, want %s called by %s", i, c.f.name, e.Code, e.Message, c.code, c.by)
		}
	}
	db.refused = true // a refused ancestor is not on the stack
	if hit, e := CheckTool(tnode, call(acct, "db", `{"id":2}`, NonReentrant), NonReentrant, nil, NameHash("db")); e != nil {
		t.Errorf("a refused ancestor was re-entered: %v (%v)", e, hit)
	}
}

// TestCheckAgent: a hand-off of the same task is a cycle; a non-reentrant
// agent on the stack, or at the top, is a re-entry; a keyed agent with the
// same key's values is refused, with other values it goes on.
func TestCheckAgent(t *testing.T) {
	handoff := func(up *tframe, a *Agent, task string) *tframe {
		f := &tframe{up: up, kind: frames.Delegate, name: a.Name, args: strconv.Quote(task), handed: "main"}
		if up != nil {
			f.mark.Filter = up.mark.Filter
		}
		a.Mark(&f.mark, task)
		return f
	}
	billing, _ := CompileAgent(&Delegation{Agent: "billing"})
	d := handoff(nil, billing, "Refund order 7.")
	d.mark.Seal(billing.NameHash)
	under := call(d, "search", `{}`, Reentrant)
	under.mark.Seal(NameHash("search"))

	if hit, e := CheckAgent(tnode, handoff(under, billing, " refund ORDER 7"), billing, "main"); hit != d || e == nil || e.Code != "delegation_cycle" {
		t.Errorf("the same task again: %v, %v; want a delegation cycle at the first hand-off", hit, e)
	}
	if hit, e := CheckAgent(tnode, handoff(under, billing, "Refund order 8."), billing, "main"); hit != d || e == nil || e.Code != "agent_reentrancy" {
		t.Errorf("a non-reentrant agent on the stack: %v, %v", hit, e)
	}
	if _, e := CheckAgent(tnode, handoff(nil, billing, "x"), billing, "billing"); e == nil || e.Code != "agent_reentrancy" || !strings.Contains(e.Message, "made the request") {
		t.Errorf("the agent at the top of the request: %v", e)
	}
	keyed, err := CompileAgent(&Delegation{Agent: "acct", Reentrancy: Keyed, Key: []string{"account"}, Metadata: []byte(`{"account": 1}`)})
	if err != nil {
		t.Fatal(err)
	}
	k := handoff(nil, keyed, "a")
	k.mark.Seal(keyed.NameHash)
	if _, e := CheckAgent(tnode, handoff(k, keyed, "b"), keyed, "main"); e == nil || e.Code != "agent_keyed_reentrancy" {
		t.Errorf("a keyed agent with the same account: %v", e)
	}
	other, _ := CompileAgent(&Delegation{Agent: "acct", Reentrancy: Keyed, Key: []string{"account"}, Metadata: []byte(`{"account": 2}`)})
	if _, e := CheckAgent(tnode, handoff(k, other, "b"), other, "main"); e != nil {
		t.Errorf("a keyed agent with another account: %v", e)
	}
	if _, err := CompileAgent(&Delegation{Agent: "acct", Reentrancy: Keyed}); err == nil {
		t.Error("a keyed agent without a key compiled")
	}
}
