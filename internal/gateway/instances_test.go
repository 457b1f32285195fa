package gateway

import (
	"fmt"
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
	r := callOn(t, a, "r3", "d", "up__delete_all", `{}`)
	if r["status"] != "pending" {
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
	if r := callOn(t, a, "r3", "d", "up__delete_all", `{}`); r["status"] != "success" || runs() != 1 {
		t.Fatalf("the repeated call on a: %v, %d runs", r, runs())
	}
	if r := callOn(t, b, "r3", "d", "up__delete_all", `{}`); r["status"] != "success" || r["replayed"] != true || runs() != 1 {
		t.Fatalf("the call repeated on b: %v, %d runs; want a's result, one run", r, runs())
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
