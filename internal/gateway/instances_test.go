package gateway

import (
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/pgtest"
)

// twoInstances builds two gateways, a and b, on one PostgreSQL database,
// in front of one probe upstream, as two `reach serve` behind a load
// balancer; extra is added to their configuration.
func twoInstances(t *testing.T, extra string) (a, b string, p *upstreamProbe) {
	t.Helper()
	url := pgtest.Database(t)
	p = newUpstreamProbe()
	up := serveUpstream(t, p)
	var urls []string
	for _, name := range []string{"a", "b"} {
		yaml := fmt.Sprintf("store: %s\ninstance: %s\ninstance_ttl: 2s\nupstreams:\n  - name: up\n    url: %s\n%s", url, name, up.URL, extra)
		cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		g := newTestGateway(t, cfg)
		urls = append(urls, serveTest(t, g).URL)
	}
	p.gateway = urls[1]
	return urls[0], urls[1], p
}

func callOn(t *testing.T, base, request, callID, tool, args string) map[string]any {
	t.Helper()
	_, out := do(t, "POST", base+"/v1/calls", fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":%q,"tool":%q,"arguments":%s}]}`,
		request, callID, tool, args), nil)
	r, _ := path(out, "results", 0).(map[string]any)
	if r == nil {
		t.Fatalf("no result: %v", out)
	}
	return r
}

// A request's calls alternate between two instances under one budget of
// tool calls: the one past it is refused on whichever instance gets it.
func TestInstancesShareABudget(t *testing.T) {
	a, b, _ := twoInstances(t, "budgets:\n  default: {tool_calls: 4}\n")
	for i := range 6 {
		base := a
		if i%2 == 1 {
			base = b
		}
		r := callOn(t, base, "r1", fmt.Sprintf("c%d", i), "up__echo", fmt.Sprintf(`{"text":"hi %d"}`, i))
		code, _ := path(r, "error", "code").(string)
		if want := i < 4; (r["status"] == "success") != want || !want && code != "budget_tool_calls" {
			t.Fatalf("call %d on %s: %v, want success %v", i, map[bool]string{true: "a", false: "b"}[base == a], r, want)
		}
	}
}

// A stop sent to one instance stops the call running on the other, and
// refuses the next on either.
func TestInstancesStopAcross(t *testing.T) {
	a, b, p := twoInstances(t, "")
	done := make(chan map[string]any, 1)
	go func() { done <- callOn(t, a, "r2", "s", "up__slow", `{"text":"long"}`) }()
	select {
	case <-p.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow call did not start")
	}
	status, out := do(t, "POST", b+"/v1/requests/r2/cancel", `{"mode":"cancel","reason":"enough"}`, nil)
	if status != 200 || out["state"] != "stopped_cancel" {
		t.Fatalf("cancel on b: %d %v", status, out)
	}
	select {
	case <-p.cancelled:
	case <-time.After(30 * time.Second):
		t.Fatal("the upstream call on a was not cancelled")
	}
	if r := <-done; r["status"] != "cancelled" {
		t.Fatalf("the slow call: %v", r)
	}
	for _, base := range []string{a, b} {
		r := callOn(t, base, "r2", "n", "up__echo", `{"text":"next"}`)
		if code, _ := path(r, "error", "code").(string); !strings.HasPrefix(code, "stopped_") {
			t.Fatalf("a call after the stop: %v", r)
		}
	}
}

// An approval asked on one instance and decided on the other lets the
// call run once, on either.
func TestInstancesApproveAcross(t *testing.T) {
	a, b, p := twoInstances(t, "")
	runs := func() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.metas) }
	askOnAApproveOnB(t, a, b, "r3")
	if r := callOn(t, a, "r3", "d", "up__delete_all", `{}`); r["status"] != "success" || runs() != 1 {
		t.Fatalf("the repeated call on a: %v, %d runs", r, runs())
	}
	if r := callOn(t, b, "r3", "d", "up__delete_all", `{}`); r["status"] != "success" || r["replayed"] != true || runs() != 1 {
		t.Fatalf("the call repeated on b: %v, %d runs; want a's result, one run", r, runs())
	}
}

// askOnAApproveOnB makes request's high-risk call d on a, which holds it
// for approval, and approves it on b.
func askOnAApproveOnB(t *testing.T, a, b, request string) {
	t.Helper()
	if r := callOn(t, a, request, "d", "up__delete_all", `{}`); r["status"] != "pending" {
		t.Fatalf("a high-risk call on a: %v", r)
	}
	_, list := do(t, "GET", b+"/v1/approvals?status=pending", "", nil)
	ap, _ := path(list, "approvals", 0).(map[string]any)
	if ap == nil {
		t.Fatalf("b lists no pending approval: %v", list)
	}
	if status, out := do(t, "POST", b+"/v1/approvals/"+ap["id"].(string)+"/approve", `{"reason":"ok"}`, nil); status != 200 {
		t.Fatalf("approving on b: %d %v", status, out)
	}
}

// An idempotency key replayed on the other instance returns the recorded
// result, and the tool does not run again.
func TestInstancesIdempotencyAcross(t *testing.T) {
	a, b, p := twoInstances(t, "tools:\n  up__add: {access: write}\n")
	runs := func() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.metas) }
	call := func(base, request string) map[string]any {
		_, out := do(t, "POST", base+"/v1/calls", fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"x","tool":"up__add","arguments":{"a":2,"b":3},"idempotency_key":"sum-1"}]}`, request), nil)
		r, _ := path(out, "results", 0).(map[string]any)
		return r
	}
	first := call(a, "r4")
	if first["status"] != "success" || runs() != 1 {
		t.Fatalf("the first call on a: %v", first)
	}
	again := call(b, "r5")
	if again["status"] != "success" || again["replayed"] != true || runs() != 1 || fmt.Sprint(again["data"]) != fmt.Sprint(first["data"]) {
		t.Fatalf("the key replayed on b: %v, %d runs; want a's result %v, one run", again, runs(), first["data"])
	}
}

// A call that comes back to the other instance under a frame of the first
// (its traceparent), with the same tool and arguments, is a cycle.
func TestInstancesCycleAcross(t *testing.T) {
	a, b, p := twoInstances(t, "tools:\n  up__hop: {reentrancy: reentrant}\n")
	p.hops = []string{b, a}
	r := callOn(t, a, "r6", "h", "up__hop", `{"n":"x"}`)
	if code := path(r, "data", "results", 0, "error", "code"); r["status"] != "success" || code != "cycle" {
		t.Fatalf("the hop through b: %v; want b to refuse a cycle", r)
	}
}

// modelInstances: two instances on one database in front of one fake
// model (each turn: 40 prompt and 7 answer tokens), every request with
// the budget budget.
func modelInstances(t *testing.T, budget string) (a, b string, fake *fakeOpenAI) {
	t.Helper()
	url := pgtest.Database(t)
	fake = &fakeOpenAI{toolName: "up__echo", args: `{}`}
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	var urls []string
	for _, name := range []string{"a", "b"} {
		yaml := fmt.Sprintf("store: %s\ninstance: %s\ninstance_ttl: 2s\nexamples: true\nbudgets:\n  default: %s\nmodel:\n  base_url: %s/v1\n  api_key: sk-fake\n  name: fake\n  prices: {fake: {input: 1000, output: 2000}}\n", url, name, budget, up.URL)
		cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, serveTest(t, newTestGateway(t, cfg)).URL)
	}
	return urls[0], urls[1], fake
}

// A request's turn, token and cost budgets are one ledger for both
// instances: turns on b, then a, then b again; the third finds the budget
// spent by the first two together (though b spent only part of it) and is
// refused without asking the model (issue 17 review, defect 3).
func TestInstancesModelBudgetAcross(t *testing.T) {
	for _, c := range []struct{ name, budget, code string }{
		{"tokens", "{tokens: 100}", "budget_tokens"}, // each turn spends 47: what is left after two holds no prompt
		{"turns", "{turns: 2}", "budget_turns"},
		{"cost", "{cost: 0.1}", "budget_cost"}, // each turn costs 40*1000/1e6 + 7*2000/1e6 = 0.054
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b, fake := modelInstances(t, c.budget)
			h := map[string]string{"baggage": "reach.request=mb1"}
			for i, base := range []string{b, a} {
				if resp, body := postChat(t, base, `{"messages":[]}`, h); resp.StatusCode != 200 {
					t.Fatalf("turn %d: %d %s", i+1, resp.StatusCode, body)
				}
			}
			resp, body := postChat(t, b, `{"messages":[]}`, h)
			if resp.StatusCode != 402 || !strings.Contains(string(body), c.code) {
				t.Errorf("third turn, on b: %d %.300s; want 402 %s", resp.StatusCode, body, c.code)
			}
			if n := fake.n.Load(); n != 2 {
				t.Errorf("the model was asked %d times, want twice", n)
			}
		})
	}
}

// A write on one instance based on a read that a write on the other
// instance made stale is refused, as on one instance: the entities'
// versions are the store's. It passes after a re-read.
func TestInstancesStaleReadAcross(t *testing.T) {
	a, b, _ := twoInstances(t, "tools:\n  up__echo: {reads: [\"sum:{text}\"]}\n  up__add: {access: write, writes: [\"sum:{a}\"]}\n")
	if r := callOn(t, a, "r1", "c1", "up__echo", `{"text":"1"}`); r["status"] != "success" {
		t.Fatalf("the read: %v", r)
	}
	if r := callOn(t, b, "r2", "c1", "up__add", `{"a":1,"b":2}`); r["status"] != "success" {
		t.Fatalf("the other request's write on b: %v", r)
	}
	r := callOn(t, a, "r1", "c2", "up__add", `{"a":1,"b":5}`)
	if code, _ := path(r, "error", "code").(string); code != "stale_read" {
		t.Fatalf("a write on a read made stale on the other instance: %v, want stale_read", r)
	}
	callOn(t, a, "r1", "c3", "up__echo", `{"text":"1"}`)
	if r := callOn(t, a, "r1", "c4", "up__add", `{"a":1,"b":6}`); r["status"] != "success" {
		t.Fatalf("the write after a re-read: %v", r)
	}
}
