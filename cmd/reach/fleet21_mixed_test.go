package main

import (
	"syscall"
	"testing"
	"time"
)

// TestFleet21OlderResumesDead: mixed versions on one PostgreSQL. o runs
// the older binary (REACH_OLD_BINARY, which heartbeats by overwriting its
// row and has no lease); n, this one, migrates the schema on start. o is
// frozen (SIGSTOP) while a call of its runs upstream; n takes it for dead,
// marks it, recovers its request and forgets it. Continued (SIGCONT), o
// heartbeats as it did: its life stays dead (schema 16's guard), where it
// used to come back alive, so that n does not take the parts o begins
// afterwards for a live instance's. (o itself goes on serving: the
// operator must restart it, docs/INSTANCES.md.)
func TestFleet21OlderResumesDead(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	old := oldBinary(t)
	f, g := gateFleetOf(t, "o", "n")
	f.cmd[0] = startBinary(t, old, f.cfg[0], f.addr[0], f.data[0])
	f.start(1)
	stopped := false
	t.Cleanup(func() {
		if stopped {
			f.cmd[0].Process.Signal(syscall.SIGCONT)
		}
		for i := range 2 {
			f.stop(i)
		}
	})
	owner := f.lifeOf(t, "o")
	running := gateOn(t, f, g, 0, "r-run", "run")
	if err := f.cmd[0].Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped = true
	f.awaitForgotten(t, owner)
	if r := storedRequest(t, f.url, "r-run"); r == nil || r.State != "interrupted" {
		t.Fatalf("r-run once n recovered o's work: %+v; want interrupted", r)
	}
	if err := f.cmd[0].Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	close(g.gate("run"))
	<-running
	// o's heartbeats come every TTL/5 (400 ms): for three TTLs, its life
	// must never be alive again, nor its row back.
	for deadline := time.Now().Add(6 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, l := range f.lives(t) {
			if l.Owner == owner {
				t.Fatalf("o's life %s is back after n forgot it (alive %v): its heartbeat revived it", owner, l.Alive)
			}
		}
	}
	if r := callHTTP(t, f.base(1), "r-new", "c", "up__count", `{"key":"new"}`, ""); r["status"] != "success" {
		t.Errorf("a call on n after o resumed: %v", r)
	}
}
