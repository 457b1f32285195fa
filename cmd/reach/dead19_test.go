package main

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
)

// TestDeadLetterTakenByAKilledInstanceOnPostgres: on a PostgreSQL store,
// an operator's retry or dismissal of a dead letter takes it, and its
// instance is killed (kill -9) right after the take, before the retry's
// request is begun. Another instance, started on the store, gives it back
// once the killed life is dead (its heartbeat instance_ttl old), not ten
// minutes later: the store recorded who took it. The operator's second
// retry then runs the undo once, or the second dismissal settles it.
func TestDeadLetterTakenByAKilledInstanceOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	pg := pgtest.Own(t)
	for i, tc := range []struct {
		name  string // the action: retry or dismiss
		body  string
		undos int // the undo's runs once the second action is answered
	}{
		{"retry", "", 1},
		{"dismiss", `{"note":"checked by hand"}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, err := pg.CreateDatabase(t.Context(), fmt.Sprint("dead19_", i))
			if err != nil {
				t.Fatal(err)
			}
			var tries atomic.Int32
			fails := func(chain, _ int) bool { return chain == 8 && tries.Add(1) == 1 }
			h := &crashRun{data: t.TempDir(), fx: newSideEffects(fails), store: url}
			upstream := sideEffectsUpstream(t, h.fx)
			config := func(name string) string {
				return writeConfig(t, "store: "+url+"\ninstance: "+name+"\ninstance_ttl: 1s\n"+
					travelYAML(upstream, "  travel__close: {access: high_risk}\n"))
			}
			addr := freeAddr(t)
			h.base = "http://" + addr
			// Instance a: leg 8/1 booked, its request cancelled (the undo's
			// first attempt fails: a dead letter), and the operator's action
			// on the dead letter killed once it took it.
			h.kill(t, config("a"), addr, "deadletter.taken", func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, book("r", "k8", 8, 1)); res.Status != "success" {
					t.Errorf("booking: %+v", res)
					return
				}
				h.post("/v1/requests/r/cancel", `{"reason":"enough"}`)
				for dl := range h.deadLetter(t) {
					h.post("/v1/deadletters/"+dl+"/"+tc.name, tc.body) // cut off by the kill
				}
			})
			addr = freeAddr(t)
			h.base = "http://" + addr
			cmd := startReach(t, config("b"), addr, h.data)
			killAtEnd(t, cmd)
			dl, state := "", ""
			for range 600 { // a's heartbeat is instance_ttl old within seconds; ten minutes is what it took before
				for id, s := range h.deadLetters(t) {
					dl, state = id, s
				}
				if state == "open" {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if state != "open" {
				t.Fatalf("dead letter %q is %q on instance b 30 s after a was killed holding it; want it open again once a is dead", dl, state)
			}
			if status, out := postJSON(t, h.base+"/v1/deadletters/"+dl+"/"+tc.name, tc.body); status != 200 {
				t.Errorf("the second %s of dead letter %s: %d %v", tc.name, dl, status, out)
			}
			if n := h.counts(func(fx *sideEffects) int { return fx.undone["8/1"] }); n != tc.undos {
				t.Errorf("the undo ran %d times after the second %s; want %d", n, tc.name, tc.undos)
			}
			if open := h.deadLetters(t); len(open) != 0 {
				t.Errorf("open dead letters after the second %s: %v", tc.name, open)
			}
			h.checkAll(t, cmd)
		})
	}
}
