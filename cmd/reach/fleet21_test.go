package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
)

// TestFleet21LateEndAfterRecovery: instance a runs a request's chain of
// two writes that declare an undo (book k1, then gate g2, undone by
// unbook); PostgreSQL goes down while g2 runs, which ends then (its
// client is answered success, its ended checkpoint, the one that holds
// its undo, kept in a's data folder); a is killed. The store comes back
// and b, still running, takes a's life for dead first: its recovery marks
// g2's checkpoint cancelled (may have run: it has no undo there), runs
// k1's undo and stores the request interrupted. Then a's successor starts
// with the kept file.
//
// The kept end finds its checkpoint marked, and its undo is dead-lettered
// (once), where before it was dropped with a warning and the write g2 stayed
// done for good. An operator's retry of the dead letter runs the undo,
// once. A second start with the same kept file (a successor killed after
// it wrote the end and before it removed the file) adds no second dead
// letter. Each write ran once; the audit chain verifies.
func TestFleet21LateEndAfterRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, g, kept := keptEndThroughOutage(t)
	saved, err := os.ReadFile(kept)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.pg.Resume(); err != nil {
		t.Fatal(err)
	}
	// b recovers a's life before a's successor starts.
	for deadline := time.Now().Add(2 * time.Minute); storedRequest(t, f.url, "r-chain").State != "interrupted"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("b did not recover a's request: it is stored %s", storedRequest(t, f.url, "r-chain").State)
		}
	}
	if n := f.up.count("unbook k1"); n != 1 {
		t.Fatalf("b's recovery ran the first write's undo %d times; want once", n)
	}
	f.start(0)
	servesAgain(t, f, 0)
	if _, err := os.Stat(kept); !os.IsNotExist(err) {
		t.Fatalf("the kept file after a's successor started: %v; want it written and removed", err)
	}
	dls := undoDeadLetters(t, f.url, "r-chain")
	if len(dls) != 1 || dls[0].Tool != "up__unbook" || dls[0].State != "open" {
		t.Fatalf("the dead letters of r-chain once a's successor wrote its kept end: %+v; want one open, of up__unbook (before, the undo was dropped)", dls)
	}
	if n := f.up.count("unbook g2"); n != 0 {
		t.Fatalf("the late undo ran %d times before an operator retried it; want 0", n)
	}

	// A successor killed after the write and before it removed the file:
	// the next start writes the end again, and adds nothing.
	f.kill(0)
	if err := os.WriteFile(kept, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	f.start(0)
	servesAgain(t, f, 0)
	if dls := undoDeadLetters(t, f.url, "r-chain"); len(dls) != 1 {
		t.Fatalf("the dead letters of r-chain after the kept end was written again: %+v; want still one", dls)
	}

	status, out := postJSON(t, f.base(1)+"/v1/deadletters/"+dlID(dls[0].ID)+"/retry", "")
	if status != 200 {
		t.Fatalf("retrying the late undo's dead letter through b: %d %v", status, out)
	}
	if n := f.up.count("unbook g2"); n != 1 {
		t.Errorf("the late undo ran %d times after its retry; want once", n)
	}
	if n, m := g.count("g2"), f.up.count("book k1"); n != 1 || m != 1 {
		t.Errorf("the writes ran %d and %d times; want once each", m, n)
	}
	verifyAudit(t, f.url)
}

// undoDeadLetters reads the stored dead letters of request id.
func undoDeadLetters(t *testing.T, url, id string) []store.DeadLetter {
	t.Helper()
	var out []store.DeadLetter
	withStore(t, url, func(st *postgres.Store) {
		ds, err := st.ListDeadLetters(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.Request == id {
				out = append(out, *d)
			}
		}
	})
	return out
}

func dlID(n int64) string { return fmt.Sprint("dl-", n) }

// TestFleet21FrozenBeforeSend: b is paused (SIGSTOP) once a call's
// connection to its upstream is ready, after the lease check at dispatch
// and before the call's bytes go out (the crash point wire.ready). a takes
// b for dead, recovers the call's request and forgets b. Continued
// (SIGCONT), b re-checks its lease just before the send, finds it lapsed,
// waits for its next heartbeat, which finds it forgotten, and holds the
// call back: the upstream never sees it, and its client is refused
// (instance_stopping, or store_unavailable), nothing ran. Before, the call
// was sent when b went on. The recovered call's checkpoint says it may
// have run (cancelled, interrupted): recovery cannot know it was held back.
func TestFleet21FrozenBeforeSend(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, g := gateFleetOf(t, "a", "b")
	f.start(0)
	var reached <-chan struct{}
	f.cmd[1], reached = startReachAt(t, f.cfg[1], f.addr[1], f.data[1], "wire.ready#1+go")
	stopped := false
	t.Cleanup(func() {
		if stopped {
			f.cmd[1].Process.Signal(syscall.SIGCONT)
		}
		for i := range 2 {
			f.stop(i)
		}
	})
	owner := f.lifeOf(t, "b")
	held := retryOn(t, f, 1, "r-held", "held")
	select {
	case <-reached:
		stopped = true
	case r := <-held:
		t.Fatalf("r-held's call on b answered before b paused at its send: %v", r)
	case <-time.After(time.Minute):
		t.Fatal("b did not reach wire.ready")
	}
	f.awaitForgotten(t, owner)
	if r := storedRequest(t, f.url, "r-held"); r == nil || r.State != "interrupted" {
		t.Fatalf("r-held once a recovered b's work: %+v; want interrupted", r)
	}
	if err := f.cmd[1].Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	r := <-held
	if c := errCode(r); c != "instance_stopping" && c != "store_unavailable" {
		t.Errorf("r-held's call, paused before its send, once b went on: %v; want refused (instance_stopping or store_unavailable)", r)
	}
	if n := g.count("held"); n != 0 {
		t.Fatalf("r-held's call reached the upstream %d times after a recovered its request; want never", n)
	}
	var fs []*store.Frame
	withStore(t, f.url, func(st *postgres.Store) {
		var err error
		if fs, err = st.RequestFrames(t.Context(), "r-held"); err != nil {
			t.Fatal(err)
		}
	})
	for _, fr := range fs {
		if fr.Name == "gate__gate" && (fr.State != "cancelled" || !strings.Contains(string(fr.Error), `"interrupted"`)) {
			t.Errorf("r-held's call's checkpoint after the recovery: %s %s; want cancelled, interrupted (it may have run)", fr.State, fr.Error)
		}
	}
	verifyAudit(t, f.url)
}

// keptEndThroughOutage is two instances on one PostgreSQL (newUndoGateFleet)
// where a's write g2, the second of request r-chain, ends while the store
// is halted, so that its end (with its undo) is kept in a's data folder;
// a is then killed. It returns the fleet (the store still halted), its
// gates and the kept file's path.
func keptEndThroughOutage(t *testing.T) (*fleet, *gates, string) {
	t.Helper()
	f, g := newUndoGateFleet(t)
	if r := callHTTP(t, f.base(0), "r-chain", "b1", "up__book", `{"key":"k1"}`, ""); r["status"] != "success" {
		t.Fatalf("the chain's first write: %v", r)
	}
	done := gateInRequest(t, f, g, 0, "r-chain", "g2")
	if err := f.pg.Halt("immediate"); err != nil {
		t.Fatal(err)
	}
	close(g.gate("g2"))
	if r := <-done; r["status"] != "success" {
		t.Fatalf("the write that ended during the outage: %v; want success", r)
	}
	f.kill(0)
	kept, err := filepath.Glob(filepath.Join(f.data[0], "idempotency-kept*"))
	if err != nil || len(kept) != 1 {
		t.Fatalf("a's data folder holds %v (%v); want its kept file", kept, err)
	}
	return f, g, kept[0]
}
