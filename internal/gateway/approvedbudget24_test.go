package gateway

import (
	"fmt"
	"os"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// oneInstance serves one gateway on its own SQLite store, with the
// upstream probe's tools (up__*) and extra configuration.
func oneInstance(t *testing.T, extra string) (string, *upstreamProbe) {
	t.Helper()
	p := newUpstreamProbe()
	up := serveUpstream(t, p)
	cfg, err := config.Parse([]byte(fmt.Sprintf("upstreams:\n  - name: up\n    url: %s\n%s", up.URL, extra)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	base := serveTest(t, newTestGateway(t, cfg)).URL
	p.gateway = base
	return base, p
}

// approvedAfterBudgetSpent: the request's high-risk call d is asked for
// approval on ask (its tool call counted then), approved on decide, then
// the request's other calls (through spend, in turn) spend its tool-call
// budget of 2, and the agent repeats d on collect: it runs, once, and
// a repeat after is answered by its run. A call never asked, after, is
// refused over budget. Before, the repeat that collects the approval was
// refused over budget, its approval used by no run.
func approvedAfterBudgetSpent(t *testing.T, ask, decide string, spend []string, collect string, p *upstreamProbe) {
	t.Helper()
	runs := func() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.metas) }
	askOnAApproveOnB(t, ask, decide, "rb")
	for i, base := range spend {
		if r := callOn(t, base, "rb", fmt.Sprintf("e%d", i), "up__echo", `{"text":"x"}`); r["status"] != "success" {
			t.Fatalf("call e%d: %v", i, r)
		}
	}
	if r := callOn(t, ask, "rb", "e9", "up__echo", `{"text":"y"}`); path(r, "error", "code") != "budget_tool_calls" {
		t.Fatalf("a call past the budget: %v; want budget_tool_calls", r)
	}
	n := runs()
	r := callOn(t, collect, "rb", "d", "up__delete_all", `{}`)
	if r["status"] != "success" || runs() != n+1 {
		t.Fatalf("the approved call repeated once the budget was spent: %v, %d runs; want it run once", r, runs()-n)
	}
	if r := callOn(t, ask, "rb", "d", "up__delete_all", `{}`); r["status"] != "success" || r["replayed"] != true || runs() != n+1 {
		t.Fatalf("the approved call repeated again: %v, %d runs; want its result replayed, one run", r, runs()-n)
	}
	if r := callOn(t, collect, "rb", "e10", "up__echo", `{"text":"z"}`); path(r, "error", "code") != "budget_tool_calls" {
		t.Fatalf("a call never asked, after the approved one ran: %v; want budget_tool_calls", r)
	}
	if r := callOn(t, ask, "rb", "d2", "up__delete_all", `{"x":1}`); path(r, "error", "code") != "budget_tool_calls" || runs() != n+1 {
		t.Fatalf("a high-risk call never asked, past the budget: %v; want budget_tool_calls, no human asked", r)
	}
}

// TestApprovedCallCollectedPastSpentBudgetOnSQLite: approvedAfterBudgetSpent
// through one gateway on SQLite.
func TestApprovedCallCollectedPastSpentBudgetOnSQLite(t *testing.T) {
	base, p := oneInstance(t, "budgets:\n  default: {tool_calls: 2}\n")
	approvedAfterBudgetSpent(t, base, base, []string{base}, base, p)
}

// TestApprovedCallCollectedPastSpentBudgetOnPostgres: approvedAfterBudgetSpent
// through two instances on one PostgreSQL: asked on a, approved on b, the
// budget spent on b (the shared ledger debits a call as it is dispatched,
// so two there), collected on a.
func TestApprovedCallCollectedPastSpentBudgetOnPostgres(t *testing.T) {
	a, b, p := twoInstances(t, "budgets:\n  default: {tool_calls: 2}\n")
	approvedAfterBudgetSpent(t, a, b, []string{b, b}, a, p)
}
