package budget

import (
	"strings"
	"testing"
)

// TestMeterAdmitsAgainstEveryAncestor: a tool call counts on the meter and
// the meters above it; one refused because an ancestor ran out counts on
// none of them, and the refusal names that ancestor.
func TestMeterAdmitsAgainstEveryAncestor(t *testing.T) {
	root := &Meter{Limit: Budget{ToolCalls: 2}, ID: "root"}
	mid := &Meter{Limit: Budget{ToolCalls: 5}, Parent: root, ID: "mid"}
	leaf := &Meter{Parent: mid, ID: "leaf"}
	for range 2 {
		if q, _ := leaf.AdmitToolCall(); q != nil {
			t.Fatalf("refused by %s within the budget", q.ID)
		}
	}
	q, detail := leaf.AdmitToolCall()
	if q != root || detail != "2 tool calls made of 2" {
		t.Fatalf("the third call: refused by %v (%q), want root", q, detail)
	}
	for _, m := range []*Meter{root, mid, leaf} {
		if u := m.Used(0); u.ToolCalls != 2 {
			t.Errorf("%s counts %d tool calls after the refusal, want 2", m.ID, u.ToolCalls)
		}
	}
	leaf.NoteDepth(4)
	if root.Used(0).MaxDepth != 4 || mid.Used(0).MaxDepth != 4 {
		t.Error("a depth noted on the leaf did not reach its ancestors")
	}
}

// TestMeterSpends: Add says which dimension it exhausts; OverSpent finds
// the meter that ran out from the leaf up; LowContext notes the topmost
// meter that runs low.
func TestMeterSpends(t *testing.T) {
	root := &Meter{Limit: Budget{Tokens: 1000}, ID: "root"}
	leaf := &Meter{Limit: Budget{Cost: 1}, Parent: root, ID: "leaf"}
	if dim, _ := leaf.Add(100, 5e8); dim != "" {
		t.Fatalf("half the cost exhausted %s", dim)
	}
	if q, _, _ := leaf.OverSpent(); q != nil {
		t.Fatalf("over spent at %s", q.ID)
	}
	if dim, detail := leaf.Add(0, 6e8); dim != "cost" || detail != "cost 1.1000 of 1.0000" {
		t.Fatalf("Add past the cost = %q, %q", dim, detail)
	}
	root.Add(850, 0)
	if n := leaf.LowContext(0.2); !strings.Contains(n, "150 of 1000 tokens left") {
		t.Fatalf("LowContext = %q, want the root's 150 of 1000", n)
	}
	if q, dim, _ := leaf.OverSpent(); q != leaf || dim != "cost" {
		t.Fatalf("OverSpent = %v, %s; want the leaf's cost", q, dim)
	}
	var r Meter
	r.Restore(Usage{Turns: 3, Tokens: 7, Cost: 0.5, MaxDepth: 2})
	if u := r.Used(0); u.Turns != 3 || u.Tokens != 7 || u.Cost != 0.5 || u.MaxDepth != 2 {
		t.Fatalf("Restore then Used = %+v", u)
	}
}
