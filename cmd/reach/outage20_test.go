package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOutage20StopKeepsCompletion: a write call ends while PostgreSQL is
// down (its client is answered success, its completion kept in memory),
// then its instance is stopped gracefully (SIGTERM) while the store is
// still down. The stop waits for the store for its grace, then leaves the
// completion in the data folder; the instance's next start writes it
// before recovery settles the claim. A retry of the call, through either
// instance, is answered its result: before, the stop dropped the kept
// completion and recovery answered the retry "interrupted". The call
// runs once. The other instance is stopped too before the store comes
// back, so that it cannot settle the stopped life's claim first (see
// docs/STATE.md: a restart more than a TTL after the store's return may
// find it settled).
func TestOutage20StopKeepsCompletion(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, g := newGateFleet(t, "2s")
	endsInOutage(t, f, g, gateKeyed(t, f, g, 0, "r-stop", "stop"), "stop")
	f.stop(0)
	f.stop(1)
	left, err := filepath.Glob(filepath.Join(f.data[0], "idempotency-kept*"))
	if err != nil || len(left) != 1 {
		t.Fatalf("the stopped instance's data folder holds %v (%v); want its kept completion's file", left, err)
	}
	if err := f.pg.Resume(); err != nil {
		t.Fatal(err)
	}
	startsAndReplays(t, f, g, left[0], "stop")
}

// endsInOutage stops PostgreSQL (immediate shutdown) while the call of
// key, whose result done gets, is held at the gate, then lets it end: it
// must end in success.
func endsInOutage(t *testing.T, f *fleet, g *gates, done <-chan map[string]any, key string) {
	t.Helper()
	if err := f.pg.Halt("immediate"); err != nil {
		t.Fatal(err)
	}
	close(g.gate(key))
	if r := <-done; r["status"] != "success" {
		t.Fatalf("the call that ended during the outage: %v; want success", r)
	}
}

// startsAndReplays starts a, then b, once the store is back, and checks
// that the start wrote a's kept completions (their file is removed), that
// a retry of the call of key through either instance is answered its
// result, that the call ran once, and that the audit chain verifies.
func startsAndReplays(t *testing.T, f *fleet, g *gates, file, key string) {
	t.Helper()
	f.start(0)
	servesAgain(t, f, 0)
	f.start(1)
	servesAgain(t, f, 1)
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the kept completions' file after the start wrote them: %v; want it removed", err)
	}
	for _, i := range []int{1, 0} {
		// A new request: the one that ran is interrupted (its end was
		// not recorded); the call's own key is the client's retry.
		r := callHTTP(t, f.base(i), "r-retry-"+f.names[i], "g", "gate__gate", fmt.Sprintf(`{"key":%q}`, key), "k-"+key)
		if r["status"] != "success" || !strings.Contains(fmt.Sprint(r["data"]), "passed "+key) {
			t.Fatalf("the call's retry through %s, after the stop and the outage: %v; want its result replayed", f.names[i], r)
		}
	}
	if n := g.count(key); n != 1 {
		t.Fatalf("the call ran %d times; want once", n)
	}
	verifyAudit(t, f.url)
}

// gateKeyed is gateOn with the call's own idempotency key, "k-"+key: a
// client's retry may come in another request.
func gateKeyed(t *testing.T, f *fleet, g *gates, i int, id, key string) <-chan map[string]any {
	t.Helper()
	ch := postCalls(f, i, fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"g","tool":"gate__gate","arguments":{"key":%q},"idempotency_key":%q}]}`, id, key, "k-"+key))
	awaitGate(t, g, key)
	return ch
}

// TestOutage20KilledAtKeptPoints: kill -9 at the durable points of the
// completions a stop leaves: once their file is written (kept.saved, the
// stop not finished), and once the next start wrote one of them, before
// it removed the file (kept.restored). After each, a start (the next one)
// writes what is left: the completion written already is not written
// twice (its claim is done: dropped, logged), the file goes, a retry
// through either instance gets the call's result, the call ran once, and
// the audit chain verifies.
func TestOutage20KilledAtKeptPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	for _, point := range []string{"kept.saved#1", "kept.restored#1"} {
		t.Run(point, func(t *testing.T) {
			f, g := newGateFleet(t, "2s")
			if point == "kept.saved#1" {
				f.stop(0)
				var reached <-chan struct{}
				f.cmd[0], reached = startReachAt(t, f.cfg[0], f.addr[0], f.data[0], point)
				servesAgain(t, f, 0)
				endsInOutage(t, f, g, gateKeyed(t, f, g, 0, "r-kill", "kill"), "kill")
				f.cmd[0].Process.Signal(syscall.SIGTERM)
				select {
				case <-reached:
				case <-time.After(time.Minute):
					t.Fatal("a's stop did not reach kept.saved")
				}
				f.kill(0)
				f.stop(1)
			} else {
				endsInOutage(t, f, g, gateKeyed(t, f, g, 0, "r-kill", "kill"), "kill")
				f.stop(0)
				f.stop(1)
			}
			left, err := filepath.Glob(filepath.Join(f.data[0], "idempotency-kept*"))
			if err != nil || len(left) != 1 {
				t.Fatalf("a's data folder holds %v (%v); want its kept completion's file", left, err)
			}
			if err := f.pg.Resume(); err != nil {
				t.Fatal(err)
			}
			if point == "kept.restored#1" {
				var reached <-chan struct{}
				f.cmd[0], reached = startReachAt(t, f.cfg[0], f.addr[0], f.data[0], point)
				select {
				case <-reached:
				case <-time.After(time.Minute):
					t.Fatal("a's start did not reach kept.restored")
				}
				f.kill(0)
				if _, err := os.Stat(left[0]); err != nil {
					t.Fatalf("the file after a kill before its removal: %v; want it there", err)
				}
			}
			startsAndReplays(t, f, g, left[0], "kill")
		})
	}
}

// TestOutage20KilledAsFenced: kill -9 at the fenced life's stop. b is
// frozen (SIGSTOP) while a call of its runs upstream; a takes it for
// dead, recovers its request and forgets it; b, continued, finds itself
// forgotten and stops its parts (cluster.fenced), and is killed there.
// Restarted, b serves again under a new life; the call ran once, its
// retry through a is answered that it may have run (not run again), the
// request stays interrupted, the old life stays dead, and the audit chain
// verifies.
func TestOutage20KilledAsFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, g := newGateFleet(t, "2s")
	f.stop(1)
	var reached <-chan struct{}
	f.cmd[1], reached = startReachAt(t, f.cfg[1], f.addr[1], f.data[1], "cluster.fenced")
	servesAgain(t, f, 1)
	owner := f.lifeOf(t, "b")
	running := gateKeyed(t, f, g, 1, "r-fz", "fz")
	if err := f.cmd[1].Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	f.awaitForgotten(t, owner)
	if r := storedRequest(t, f.url, "r-fz"); r == nil || r.State != "interrupted" {
		t.Fatalf("r-fz once a recovered b's work: %+v; want interrupted", r)
	}
	if err := f.cmd[1].Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("b did not reach cluster.fenced")
	}
	f.kill(1)
	close(g.gate("fz"))
	<-running
	f.start(1)
	servesAgain(t, f, 1)
	if r := callHTTP(t, f.base(1), "r-after", "c", "up__count", `{"key":"after"}`, ""); r["status"] != "success" {
		t.Fatalf("a call on b restarted after it was killed fenced: %v", r)
	}
	r := callHTTP(t, f.base(0), "r-fz-retry", "g", "gate__gate", `{"key":"fz"}`, "k-fz")
	if errCode(r) != "interrupted" {
		t.Errorf("the retry of the call b ran when it froze: %v; want interrupted (it may have run)", r)
	}
	if n := g.count("fz"); n != 1 {
		t.Fatalf("the call ran %d times; want once", n)
	}
	if r := storedRequest(t, f.url, "r-fz"); r == nil || r.State != "interrupted" {
		t.Fatalf("r-fz after b's restart: %+v; want interrupted", r)
	}
	for _, l := range f.lives(t) {
		if l.Owner == owner && l.Alive {
			t.Fatalf("b's killed fenced life %s is alive: %+v", owner, l)
		}
	}
	verifyAudit(t, f.url)
}
