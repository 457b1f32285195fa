package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Two `reach serve` on one PostgreSQL: a write without a key runs on
// instance a (the gate holds it upstream; its caller has not gone, or a has
// not noticed yet), and the identical call, its client's retry in the same
// request, is sent through instance b. b refuses it (still_running, naming a's
// request), and the tool ran once. Once a's write ended, the identical call
// through b runs: the mark went with its claim. Before, b's claim saw
// nothing (no cut-off row yet: a had not seen its caller go) and ran the
// write a second time, as 3 of 20 retries sent at once did.
func TestInFlight22RetryThroughAnotherWhileItRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, g := newGateFleet(t, "2s")
	first := gateOn(t, f, g, 0, "first22", "pear")
	// The same request's call again (its client's retry), through b.
	retry := postCalls(f, 1, `{"request_id":"first22","tool_calls":[{"call_id":"g2","tool":"gate__gate","arguments":{"key":"pear"}}]}`)
	select {
	case r := <-retry:
		if errCode(r) != "still_running" || !strings.Contains(fmt.Sprint(r["error"]), "request first22") {
			t.Fatalf("the identical call through b while a's runs: %v; want still_running, naming request first22", r)
		}
	case k := <-g.started:
		close(g.gate(k))
		t.Fatalf("the identical call through b ran %s a second time while a's still ran", k)
	case <-time.After(time.Minute):
		t.Fatal("the identical call through b was not answered")
	}
	if n := g.count("pear"); n != 1 {
		t.Fatalf("the write ran %d times, want once", n)
	}
	close(g.gate("pear"))
	if r := <-first; r["status"] != "success" {
		t.Fatalf("a's write once the gate opened: %v; want success", r)
	}
	// a's write ended: its mark goes with its claim's completion, which
	// a commits after it answered (off the call's wait path), so the test
	// waits for the mark to go, not for the answer; then the same call runs.
	for deadline := time.Now().Add(time.Minute); inFlightMarks(t, f.url) != 0; {
		if time.Now().After(deadline) {
			t.Fatal("a's in-flight mark is still held a minute after its write answered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := callHTTP(t, f.base(1), "first22", "g3", "gate__gate", `{"key":"pear"}`, ""); r["status"] != "success" {
		t.Fatalf("the identical call through b once a's ended: %v; want it run", r)
	}
	if n := g.count("pear"); n != 2 {
		t.Fatalf("the write ran %d times, want twice (a's, and the call after it ended)", n)
	}
}

// inFlightMarks counts the claims held that carry an in-flight mark.
func inFlightMarks(t *testing.T, url string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM idempotency WHERE cut_key IS NOT NULL AND state = 'claimed'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Instance a is killed (-9) while a write without a key runs there: its
// in-flight mark does not outlive its life. Once b judged a dead and
// recovered its work, no mark is held, and the identical write through b
// is not refused as still running: it is told the write was cut off (the
// recovery noted it), and the call after runs.
func TestInFlight22DeadInstanceLeavesNoMark(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, g := newGateFleet(t, "2s")
	owner := f.lifeOf(t, "a")
	gateOn(t, f, g, 0, "dead22", "pear")
	if n := inFlightMarks(t, f.url); n != 1 {
		t.Fatalf("%d in-flight marks while a's write runs, want 1", n)
	}
	f.kill(0)
	f.awaitForgotten(t, owner)
	if n := inFlightMarks(t, f.url); n != 0 {
		t.Fatalf("%d in-flight marks once a was recovered, want none", n)
	}
	close(g.gate("pear"))
	if r := callHTTP(t, f.base(1), "after22-0", "g", "gate__gate", `{"key":"pear"}`, ""); errCode(r) != "interrupted" {
		t.Fatalf("the identical write through b once a was recovered: %v; want interrupted (cut off by a's death), not still_running", r)
	}
	if r := callHTTP(t, f.base(1), "after22-1", "g", "gate__gate", `{"key":"pear"}`, ""); r["status"] != "success" {
		t.Fatalf("the identical write after that: %v; want it run", r)
	}
	if n := g.count("pear"); n != 2 {
		t.Fatalf("the write ran %d times, want twice (on a, and the call after the refusal)", n)
	}
}
