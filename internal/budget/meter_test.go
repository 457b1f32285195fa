package budget

import (
	"strings"
	"testing"
	"time"
)

// TestMeterAdmitsAgainstEveryAncestor: a tool call counts on the meter and
// the meters above it; one refused because an ancestor ran out counts on
// none of them, and the refusal names that ancestor.
func TestMeterAdmitsAgainstEveryAncestor(t *testing.T) {
	root := &Meter{Limit: Budget{ToolCalls: 2}}
	mid := &Meter{Limit: Budget{ToolCalls: 5}, Parent: root}
	leaf := &Meter{Parent: mid}
	name := map[*Meter]string{root: "root", mid: "mid", leaf: "leaf"}
	for range 2 {
		if q, _ := leaf.AdmitToolCall(); q != nil {
			t.Fatalf("refused by %s within the budget", name[q])
		}
	}
	q, detail := leaf.AdmitToolCall()
	if q != root || detail != "2 tool calls made of 2" {
		t.Fatalf("the third call: refused by %v (%q), want root", q, detail)
	}
	for _, m := range []*Meter{root, mid, leaf} {
		if u := m.Used(0); u.ToolCalls != 2 {
			t.Errorf("%s counts %d tool calls after the refusal, want 2", name[m], u.ToolCalls)
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
	root := &Meter{Limit: Budget{Tokens: 1000}}
	leaf := &Meter{Limit: Budget{Cost: 1}, Parent: root}
	if dim, _ := leaf.Add(100, 5e8); dim != "" {
		t.Fatalf("half the cost exhausted %s", dim)
	}
	if q, _, _ := leaf.OverSpent(); q != nil {
		t.Fatalf("over spent at %p", q)
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

// TestMeterCarriesEarlierRuns: a meter restored from what the earlier runs
// of a request spent counts on from it, its wall clock after theirs, and
// refuses a tool call once the earlier runs made them all; a run's wall
// clock stops counting when it ends. Before, Restore kept no wall clock
// and Used counted the time since the run began for ever.
func TestMeterCarriesEarlierRuns(t *testing.T) {
	m := &Meter{Limit: Budget{ToolCalls: 3, Wall: time.Minute}}
	if m.Carried() {
		t.Fatal("a new meter is carried")
	}
	m.Restore(Usage{ToolCalls: 2, Turns: 1, Wall: 20 * time.Second})
	if !m.Carried() {
		t.Fatal("a restored meter is not carried")
	}
	if u := m.Used(5 * time.Second); u.Wall != 25*time.Second || u.ToolCalls != 2 || u.Turns != 1 {
		t.Fatalf("Used(5s) after the earlier runs' 20s = %+v, want a wall of 25s", u)
	}
	if q, _ := m.AdmitToolCall(); q != nil {
		t.Fatal("the third tool call of 3 refused")
	}
	if q, detail := m.AdmitToolCall(); q != m || detail != "3 tool calls made of 3" {
		t.Fatalf("the fourth: refused by %v (%q), want this meter", q, detail)
	}
	if left := Remaining(m.Limit, m.Used(10*time.Second)); left.Wall != 30*time.Second || left.ToolCalls != 0 {
		t.Fatalf("Remaining = %+v, want 30s and no tool call", left)
	}
	m.End(7 * time.Second)
	m.End(time.Hour) // only the first counts
	if u := m.Used(time.Hour); u.Wall != 27*time.Second {
		t.Fatalf("Used after End(7s) = %v, want 27s whatever time has passed since", u.Wall)
	}
	var z Meter
	z.Restore(Usage{})
	if !z.Carried() {
		t.Fatal("a meter restored from no spend is not carried")
	}
}
