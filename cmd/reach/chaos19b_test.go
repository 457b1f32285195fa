package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestChaos19bCompletionKeptThroughOutage: a write call ends while
// PostgreSQL is down: its client is answered success, but the store
// refuses its completion. The instance keeps the completion and writes it
// once the store answers again, so that a retry of the call (its key),
// through either instance, is answered its result: it used to be answered
// "interrupted" (it may have run), the claim left as if the call had been
// cut off. The call runs once.
func TestChaos19bCompletionKeptThroughOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, g := newGateFleet(t, "2s")
	endsInOutage(t, f, g, gateOn(t, f, g, 0, "r-kept", "kept"), "kept")
	// Calls during the outage, each refused (the store does not answer):
	// each error the store's users log comes once, not once a call.
	for n := range 8 {
		id := fmt.Sprintf("r-down-%d", n)
		postTo(t, f.base(0)+"/v1/calls", fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"c","tool":"up__count","arguments":{"key":%q}}]}`, id, id))
	}
	if err := f.pg.Resume(); err != nil {
		t.Fatal(err)
	}
	servesAgain(t, f, 0)
	servesAgain(t, f, 1)
	for _, i := range []int{1, 0} {
		r := callHTTP(t, f.base(i), "r-kept", "g", "gate__gate", `{"key":"kept"}`, "")
		if r["status"] != "success" || !strings.Contains(fmt.Sprint(r["data"]), "passed kept") {
			t.Fatalf("the call's retry through %s, after the outage: %v; want its result replayed", f.names[i], r)
		}
	}
	if n := g.count("kept"); n != 1 {
		t.Fatalf("the call ran %d times; want once", n)
	}
	verifyAudit(t, f.url)
	logged, err := os.ReadFile(f.cmd[0].Stdout.(*os.File).Name())
	if err != nil {
		t.Fatal(err)
	}
	errs := map[string]int{}
	for _, line := range strings.Split(string(logged), "\n") {
		if _, msg, ok := strings.Cut(line, "level=ERROR msg="); ok {
			msg, _, _ = strings.Cut(strings.TrimPrefix(msg, `"`), `"`)
			errs[msg]++
		}
	}
	t.Logf("errors a logged, by message: %v", errs)
	for msg, n := range errs {
		if n > 1 {
			t.Errorf("a logged %q %d times during one outage; want once, its repeats counted", msg, n)
		}
	}
}
