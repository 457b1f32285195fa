package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store/postgres"
)

// TestEnded20UndoThroughOutage: a request's chain of two writes that
// declare an undo (book k1, then gate g2, whose undo is unbook g2); the
// store (PostgreSQL) goes down while the second runs, which ends then:
// its client is answered success, and the store refuses its ended
// checkpoint (the one that holds its undo) as it refuses its key's
// result. Then
//
//   - back: the store comes back, the instance writes the ended checkpoint
//     it kept, and is killed (kill -9);
//   - sigterm: the instance is stopped gracefully while the store is
//     still down (the checkpoint left in the data folder);
//   - kill: the instance is killed (kill -9) while the store is still
//     down (the checkpoint is in the data folder as it was kept);
//   - kept.ended#1: killed at the crash point, once the checkpoint is
//     kept, before the call's client is answered;
//   - recovery.undone#2: as back, then the restarted instance is killed
//     in its recovery, once both undos ran, before the request is stored
//     interrupted; restarted again, it runs neither undo a second time.
//
// After each, restarted, the instance's recovery interrupts the request
// and runs both undos, once each: before, the second write's checkpoint
// was marked cancelled (may have run) and its undo never ran, while its
// key answered success. Each write ran once, the audit chain verifies.
func TestEnded20UndoThroughOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	for _, how := range []string{"back", "sigterm", "kill", "kept.ended#1", "recovery.undone#2"} {
		t.Run(how, func(t *testing.T) {
			f, g := newUndoGateFleet(t)
			var reached <-chan struct{}
			if how == "kept.ended#1" {
				f.stop(0)
				f.cmd[0], reached = startReachAt(t, f.cfg[0], f.addr[0], f.data[0], how)
				servesAgain(t, f, 0)
			}
			if r := callHTTP(t, f.base(0), "r-chain", "b1", "up__book", `{"key":"k1"}`, ""); r["status"] != "success" {
				t.Fatalf("the chain's first write: %v", r)
			}
			done := gateInRequest(t, f, g, 0, "r-chain", "g2")
			if err := f.pg.Halt("immediate"); err != nil {
				t.Fatal(err)
			}
			close(g.gate("g2"))
			if reached != nil {
				// Killed once the end is kept, before its client is
				// answered.
				select {
				case <-reached:
				case <-time.After(time.Minute):
					t.Fatal("a did not reach kept.ended")
				}
				f.kill(0)
			} else if r := <-done; r["status"] != "success" {
				t.Fatalf("the write that ended during the outage: %v; want success", r)
			}
			// The other instance cannot recover a's life before a's
			// start: it is stopped before the store comes back.
			f.stop(1)
			switch how {
			case "back", "recovery.undone#2":
				if err := f.pg.Resume(); err != nil {
					t.Fatal(err)
				}
				awaitFrameEnded(t, f.url, "r-chain", "gate__gate")
				f.kill(0)
			case "sigterm":
				f.stop(0)
				if err := f.pg.Resume(); err != nil {
					t.Fatal(err)
				}
			case "kill", "kept.ended#1":
				if f.cmd[0] != nil {
					f.kill(0)
				}
				if err := f.pg.Resume(); err != nil {
					t.Fatal(err)
				}
			}
			if how == "recovery.undone#2" {
				// Killed in its recovery of the old life, once both undos
				// ran and their keys are settled, before the request is
				// stored interrupted: what a read between the undos and
				// that store sees (the request still running).
				f.cmd[0], reached = startReachAt(t, f.cfg[0], f.addr[0], f.data[0], how)
				select {
				case <-reached:
				case <-time.After(time.Minute):
					t.Fatal("a did not reach recovery.undone#2")
				}
				f.kill(0)
				if n, m := f.up.count("unbook g2"), f.up.count("unbook k1"); n != 1 || m != 1 {
					t.Fatalf("at recovery.undone#2 the undos ran %d and %d times; want once each", n, m)
				}
				if r := storedRequest(t, f.url, "r-chain"); r.State != "running" {
					t.Fatalf("at recovery.undone#2 r-chain is stored %s; want running (interrupted once its undos ran)", r.State)
				}
			}
			f.start(0)
			servesAgain(t, f, 0)
			// The instance recovers its old life while it serves, once
			// that life is found dead: the request is stored interrupted
			// after its undos ran (docs/STATE.md), the last step of its
			// recovery. Wait for that, not for the undos.
			awaitStoredEnd(t, f.url, "r-chain")
			if n := f.up.count("unbook g2"); n != 1 {
				t.Errorf("the undo of the write that ended during the outage ran %d times; want once (the request interrupted)", n)
			}
			if n := f.up.count("unbook k1"); n != 1 {
				t.Errorf("the undo of the write before the outage ran %d times; want once", n)
			}
			if n, m := g.count("g2"), f.up.count("book k1"); n != 1 || m != 1 {
				t.Errorf("the writes ran %d and %d times; want once each", m, n)
			}
			if r := storedRequest(t, f.url, "r-chain"); r.State != "interrupted" {
				t.Errorf("r-chain is stored %s; want interrupted", r.State)
			}
			verifyAudit(t, f.url)
		})
	}
}

// newUndoGateFleet is newGateFleet with an undo declared for gate__gate
// (up__unbook of its key) and for up__book (up__unbook), instance_ttl 2s.
func newUndoGateFleet(t *testing.T) (*fleet, *gates) {
	t.Helper()
	return gateFleet(t, "2s", `tools:
  up__book: {undo: {tool: up__unbook, args: '{"key": "{args.key}"}'}}
  gate__gate: {undo: {tool: up__unbook, args: '{"key": "{args.key}"}'}}
`)
}

// gateInRequest calls gate__gate with key in request id (call id "g-"+key)
// on instance i and returns once the upstream runs it; the call's result
// comes on the channel.
func gateInRequest(t *testing.T, f *fleet, g *gates, i int, id, key string) <-chan map[string]any {
	t.Helper()
	ch := postCalls(f, i, fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":%q,"tool":"gate__gate","arguments":{"key":%q}}]}`, id, "g-"+key, key))
	awaitGate(t, g, key)
	return ch
}

// awaitFrameEnded waits until request's frame of tool is stored
// completed with its undo (a minute at most).
func awaitFrameEnded(t *testing.T, url, request, tool string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		st, err := postgres.Open(t.Context(), url, nil)
		if err == nil {
			fs, err := st.RequestFrames(t.Context(), request)
			st.Close()
			if err == nil {
				for _, fr := range fs {
					if fr.Name == tool && fr.State == "completed" && len(fr.Undo) > 0 {
						return
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ended checkpoint of %s in %s was not written once the store came back", tool, request)
		}
	}
}

// awaitStoredEnd waits until request is stored in a state other than
// running (a minute at most): its recovery stores it so last, once its
// undos ran.
func awaitStoredEnd(t *testing.T, url, request string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		st, err := postgres.Open(t.Context(), url, nil)
		if err == nil {
			r, err := st.GetRequest(t.Context(), request)
			st.Close()
			if err == nil && r.State != "running" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was still stored running a minute after the restart", request)
		}
	}
}
