package main

import (
	"fmt"
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
	done := gateOn(t, f, g, 0, "r-kept", "kept")
	if err := f.pg.Halt("immediate"); err != nil {
		t.Fatal(err)
	}
	close(g.gate("kept"))
	if r := <-done; r["status"] != "success" {
		t.Fatalf("the call that ended during the outage: %v; want success", r)
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
}
