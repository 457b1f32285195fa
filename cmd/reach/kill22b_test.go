package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestKill22bReleasedOnPostgres kills instance a of two sharing a
// PostgreSQL store (kill -9) right after it released a stopped request r
// to a recovery (request.released): r has a part on b, which died, so a
// only leaves it, for a recovery to claim. A write of r with no undo, in
// flight on a when r was stopped (a soft stop lets it finish), was
// answered its result just before r's end; the test holds the write's
// idempotency row locked while an operator stops a (SIGTERM), which ends
// r, so that the write's recorded result is still queued in a's writer
// when a releases r. a restarts and its recovery ends r, stopped: the
// write stays done (it declares no undo), a retry of its key is answered
// its result, and it ran once. Before, the release went to the store
// ahead of the queued result, and the retry was answered interrupted.
func TestKill22bReleasedOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, g := gateFleet(t, "2s", "")
	if r := callHTTP(t, f.base(1), "r", "c0", "up__count", `{"key":"b1"}`, ""); r["status"] != "success" {
		t.Fatalf("r's call on b: %v", r)
	}
	f.kill(1)
	// b's life is held alive on the store's clock until r is stopped: a
	// restart of a slower than the TTL would otherwise recover b's part
	// of r at once, and r would end interrupted before its write w.
	releaseB := holdAlive(t, f.url, "b")
	f.stop(0)
	cmd, reached := startReachAt(t, f.cfg[0], f.addr[0], f.data[0], "request.released")
	f.cmd[0] = cmd // serving (startReachAt waits for it); no other request runs on a
	answered := gateKeyed(t, f, g, 0, "r", "w")
	if out := getJSON(t, "POST", f.base(0)+"/v1/requests/r/cancel", `{"mode":"soft","reason":"enough"}`); out["state"] != "stopped_soft" {
		t.Fatalf("the soft stop of r: %v", out)
	}
	// b is dead for a once its heartbeat is older than the TTL.
	releaseB()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		alive := false
		for _, l := range f.lives(t) {
			alive = alive || (l.Name == "b" && l.Alive)
		}
		if !alive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b still seen alive a minute after its kill")
		}
	}
	// The write's claim (and any other open claim of r) is locked: its
	// result, once the tool is back, waits in a's writer until the lock
	// goes.
	lock, err := pgx.Connect(t.Context(), f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(t.Context())
	tx, err := lock.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := tx.QueryRow(t.Context(), `WITH l AS (SELECT 1 FROM idempotency WHERE request = 'r' AND state = 'claimed' FOR UPDATE) SELECT count(*) FROM l`).Scan(&rows); err != nil || rows == 0 {
		t.Fatalf("locking the write's claim: %d rows, %v; want it", rows, err)
	}
	close(g.gate("w"))
	select {
	case r := <-answered:
		if r["status"] != "success" {
			t.Fatalf("the write: %v", r)
		}
	case <-time.After(time.Minute):
		t.Fatal("the write was not answered")
	}
	// An operator stops a (SIGTERM): it ends r and, b dead, releases it
	// (request.released). The release waits on the writer, which holds
	// the write's result until the lock goes: within the second the lock
	// is held, a releases nothing. (Before, the release was stored while
	// the result waited, and a kill there lost the result.) Killed at the
	// point, a's connections close before the lock goes, and what its
	// writer held is not committed.
	f.cmd[0].Process.Signal(syscall.SIGTERM)
	select {
	case <-reached:
	case <-time.After(time.Second):
		tx.Rollback(t.Context())
		select {
		case <-reached:
		case <-time.After(time.Minute):
			t.Fatal("a never reached request.released")
		}
	}
	f.kill(0)
	// What a's writer had sent before the kill is not committed: as
	// when the kill comes before the writer's commit reaches the server.
	if _, err := lock.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	tx.Rollback(t.Context())
	f.start(0)
	for deadline := time.Now().Add(2 * time.Minute); storedRequest(t, f.url, "r").Ended.IsZero(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the restart did not recover the released request: it is stored %+v", storedRequest(t, f.url, "r"))
		}
	}
	if s := storedRequest(t, f.url, "r").State; s != "stopped" {
		t.Errorf("request r is stored %s; want stopped", s)
	}
	r := callHTTP(t, f.base(0), "r-retry", "g", "gate__gate", `{"key":"w"}`, "k-w")
	if r["status"] != "success" || !strings.Contains(fmt.Sprint(r["data"]), "passed w") {
		t.Errorf("the retry of the write's key: %v; want its result", r)
	}
	if n := g.count("w"); n != 1 {
		t.Errorf("the write ran %d times; want once", n)
	}
	verifyAudit(t, f.url)
}

// TestKill22bEntitiesRanOnPostgres kills instance a of two sharing a
// PostgreSQL store (kill -9) after a write's tool ran, before the write
// claimed again the entity it writes (entities.ran): the write of doc:d
// (its tool declares writes: doc:{key}) ran on a while a request on b
// read doc:d. b recovers a's dead life, whose checkpoint of the write is
// open: it moves doc:d on, so that the request's next write of doc:d,
// based on what it read while the write ran, is refused stale_read and
// does not run. Before, the versions stayed as before the write and the
// stale write ran.
func TestKill22bEntitiesRanOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := killedAtEntitiesRan(t, "2s")
	for deadline := time.Now().Add(2 * time.Minute); storedRequest(t, f.url, "r-write").Ended.IsZero(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("b did not recover a's dead life: r-write is stored %+v", storedRequest(t, f.url, "r-write"))
		}
	}
	r := callHTTP(t, f.base(1), "r-read", "c2", "up__count", `{"key":"d"}`, "")
	if e, _ := r["error"].(map[string]any); r["status"] == "success" || e["code"] != "stale_read" {
		t.Errorf("a write of doc:d based on the read made while a's write ran: %v; want it refused stale_read", r)
	}
	if n := f.up.count("count d"); n != 0 {
		t.Errorf("the stale write ran %d times; want never", n)
	}
}

// killedAtEntitiesRan starts two instances sharing a PostgreSQL store
// (instance_ttl ttl) whose tools write and read doc:{key}, has a write of
// doc:d run on a (armed at entities.ran) while a request on b reads
// doc:d, and kills a (kill -9) once its write claimed the entity again.
func killedAtEntitiesRan(t *testing.T, ttl string) *fleet {
	t.Helper()
	f, g := gateFleet(t, ttl, `tools:
  gate__gate: {writes: ["doc:{key}"]}
  up__hop: {reads: ["doc:{key}"]}
  up__count: {writes: ["doc:{key}"]}
`)
	f.stop(0)
	cmd, reached := startReachAt(t, f.cfg[0], f.addr[0], f.data[0], "entities.ran")
	f.cmd[0] = cmd
	gateKeyed(t, f, g, 0, "r-write", "d")
	if r := callHTTP(t, f.base(1), "r-read", "c1", "up__hop", `{"key":"d"}`, ""); r["status"] != "success" {
		t.Fatalf("the read of doc:d on b: %v", r)
	}
	close(g.gate("d"))
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("a never reached entities.ran")
	}
	f.kill(0)
	return f
}
