package main

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
)

// TestKill37ResponseOwnerStored kills a real `reach serve` (kill -9) at
// owner.stored: the owner of a Responses API answer recorded in the store
// (docs/STATE.md, "Responses API answers across a restart"), before the
// answer's id is passed on. After the restart, a turn of the same
// principal that names the answer (previous_response_id) goes on to the
// endpoint: the id is known though the life that recorded it is gone
// (its memory of owners with it), not refused previous_response_not_found.
// A turn that names an id reach never gave is still refused.
func TestKill37ResponseOwnerStored(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	runs(t, nil, ownerCases(t))
}

// TestKill37ResponseOwnerStoredOnPostgres is TestKill37ResponseOwnerStored
// over PostgreSQL (one instance, restarted under its name).
func TestKill37ResponseOwnerStoredOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	pg := pgtest.Own(t)
	runs(t, func(t *testing.T) string {
		url, err := pg.CreateDatabase(t.Context(), "owner37")
		if err != nil {
			t.Fatal(err)
		}
		return url
	}, ownerCases(t))
}

// ownerCases are the cases of TestKill37ResponseOwnerStored: one turn
// through the Responses API, killed once its answer's owner is durable.
func ownerCases(t *testing.T) []durablePoint {
	var asked atomic.Int32
	up := fakeResponses(t, &asked)
	return []durablePoint{{
		point: "owner.stored",
		more:  "model: {base_url: '" + up + "'}\n",
		drive: func(t *testing.T, h *crashRun) {
			h.responsesTurn(t, `{"model":"m","input":"go"}`) // cut off by the kill
		},
		check: func(t *testing.T, h *crashRun) {
			before := asked.Load()
			status, body := h.responsesTurn(t, `{"model":"m","previous_response_id":"`+fakeResponseID+`","input":"and then"}`)
			if status != http.StatusOK || asked.Load() != before+1 {
				t.Errorf("a turn naming the answer whose owner was stored before the kill: %d %s (the endpoint asked %d times, %d before); want it passed on",
					status, body, asked.Load(), before)
			}
			status, body = h.responsesTurn(t, `{"model":"m","previous_response_id":"resp_never_given","input":"and then"}`)
			if status != http.StatusBadRequest || !strings.Contains(body, "previous_response_not_found") {
				t.Errorf("a turn naming an answer reach never gave: %d %s; want 400 previous_response_not_found", status, body)
			}
		},
	}}
}

// fakeResponseID is the id of every answer of fakeResponses.
const fakeResponseID = "resp_kill37"

// fakeResponses serves a Responses API endpoint on loopback, each answer
// whole and with the id fakeResponseID, counting the turns it is asked;
// it returns its base URL.
func fakeResponses(t *testing.T, asked *atomic.Int32) string {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"`+fakeResponseID+`","object":"response","status":"completed","model":"m","output":[{"type":"message","id":"msg_kill37","role":"assistant","status":"completed","content":[{"type":"output_text","text":"done","annotations":[]}]}],"usage":{"input_tokens":100,"output_tokens":50,"total_tokens":150}}`)
	}))
	t.Cleanup(up.Close)
	return up.URL
}

// responsesTurn asks the Responses API route for the turn body, and
// returns the answer's status and body (0 if the gateway was killed
// meanwhile).
func (h *crashRun) responsesTurn(t *testing.T, body string) (int, string) {
	resp, err := (&http.Client{Timeout: time.Minute}).Post(h.base+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestKill37SurvivorTakesOverOnPostgres is TestCrashAtEveryDurablePointOnPostgres
// with the killed instance gone for good: instance a is killed (kill -9)
// at each point and never started again; instance b, started on the same
// store with a data folder of its own, takes over a's work once a's life
// is dead (its heartbeat instance_ttl old), and each case's checks, and
// the common ones, are made through b. A point that a recovery reaches
// is armed on b, recovering a's life, and checked through a third
// instance c that recovers both. What the rows of docs/STATE.md promise
// "after a kill -9 there and a restart" holds when no restart comes: no
// write applied twice, every undo run once or dead-lettered, the chain
// verifying, a pending approval still pending, a stopped request still
// stopped, a turn's charge spent once. Not here, as in
// TestCrashAtEveryDurablePointOnPostgres: claimed#4 and deadletter.taken
// (TestDeadLetterTakenByAKilledInstanceOnPostgres is that one's survivor
// test), nor the writer's commit cases (those need a life that drives
// until its Nth commit, which the restart checks as any other).
func TestKill37SurvivorTakesOverOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	var cases []durablePoint
	for _, tc := range append(pointCases(), stopEndCases()...) {
		switch tc.point {
		case "claimed#4", "deadletter.taken", "model.answered": // the last: ledgerPoints' own
		default:
			cases = append(cases, tc)
		}
	}
	cases = append(append(cases, ledgerPoints()...), survivorCallPoints()...)
	pg := pgtest.Own(t)
	n := 0
	survivorRuns(t, func(t *testing.T) string {
		n++
		url, err := pg.CreateDatabase(t.Context(), fmt.Sprint("survivor", n))
		if err != nil {
			t.Fatal(err)
		}
		return url
	}, cases)
}

// survivorRuns runs cases over the PostgreSQL database pg makes for each,
// as runs does, but the life killed at the point is never started again:
// another instance takes over its work.
func survivorRuns(t *testing.T, pg func(t *testing.T) string, cases []durablePoint) {
	fails := func(chain, _ int) bool { return chain == 9 }
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.point, "#", "_"), func(t *testing.T) {
			h := &crashRun{data: t.TempDir(), fx: newSideEffects(fails), store: pg(t)}
			more := tc.more
			if tc.model {
				more += "model: {base_url: '" + fakeModel(t) + "'}\n"
			}
			upstream := sideEffectsUpstream(t, h.fx)
			config := func(name string) string {
				return writeConfig(t, "store: "+h.store+"\ninstance: "+name+"\ninstance_ttl: 1s\n"+
					travelYAML(upstream, "  travel__close: {access: high_risk}\n"+more))
			}
			// next moves h to a new instance's address and data folder.
			next := func() string {
				h.data = t.TempDir()
				addr := freeAddr(t)
				h.base = "http://" + addr
				return addr
			}
			addr := next()
			last := "b"
			if tc.recovery {
				h.kill(t, config("a"), addr, tc.first, tc.drive)
				h.kill(t, config("b"), next(), tc.point, nil) // in its recovery of a's life
				last = "c"
			} else {
				h.kill(t, config("a"), addr, tc.point, tc.drive)
			}
			cmd := startReach(t, config(last), next(), h.data)
			killAtEnd(t, cmd)
			h.recovered(t)
			if tc.check != nil {
				tc.check(t, h)
			}
			h.checkAll(t, cmd)
		})
	}
}

// survivorCallPoints are the cases of TestKill37SurvivorTakesOverOnPostgres
// at a call's own points (TestKill30CallPointsOnPostgres restarts the
// killed instance there): request r books leg 1 (key k1), then its
// instance dies during leg 2 (key k2), at its claim, its "executing"
// checkpoint, its end with its undo, or its connection to the upstream
// ready. Through the survivor: r interrupted and refusing its calls; leg
// 1 undone once, its retry answered undone; leg 2 run again only if its
// checkpoint was never written (a claim commits before its checkpoint on
// PostgreSQL), answered interrupted if it may have run, undone once if it
// ended with its undo.
func survivorCallPoints() []durablePoint {
	var out []durablePoint
	for _, tc := range []struct {
		point  string
		retry  string // the error code a retry of leg 2 gets; "" if it runs
		booked int    // how many times leg 2 ran, in all
		undone int    // how many times leg 2 was undone
	}{
		{"claimed#2", "", 1, 0},
		{"executing#2", "interrupted", 0, 0},
		{"ended#2", "undone", 1, 1},
		{"wire.ready#2", "interrupted", 0, 0},
	} {
		out = append(out, durablePoint{
			point: tc.point,
			drive: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, book("r", "k1", 1, 1)); res.Status != "success" {
					t.Errorf("leg 1: %+v", res)
					return
				}
				h.post("/v1/calls", book("r", "k2", 1, 2)) // cut off by the kill
			},
			check: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, book("r", "k3", 1, 3)); res.Status != "refused" || res.Error == nil || res.Error.Code != "request_interrupted" {
					t.Errorf("a call in the interrupted request r through the survivor got %+v; want it refused as request_interrupted", res)
				}
				res := call(t, h.base, book("", "k2", 1, 2))
				switch {
				case tc.retry == "" && (res.Status != "success" || res.Replayed):
					t.Errorf("the retry of leg 2 got %+v; want it to run (it never started)", res)
				case tc.retry != "" && (res.Error == nil || res.Error.Code != tc.retry || res.Error.Suggestion == ""):
					t.Errorf("the retry of leg 2 got %+v; want the error %s, with a suggestion", res, tc.retry)
				}
				h.undoneOnce(t, "r", "k1")
				h.fx.mu.Lock()
				defer h.fx.mu.Unlock()
				if n := h.fx.booked[toolKey("travel__book", "k2")]; n != tc.booked {
					t.Errorf("leg 2 ran %d times, want %d", n, tc.booked)
				}
				if n := h.fx.undone["1/2"]; n != tc.undone {
					t.Errorf("leg 2 undone %d times, want %d", n, tc.undone)
				}
				if n := h.fx.legs["1/3"]; n != 0 {
					t.Errorf("leg 3, called in the interrupted request, booked %d times", n)
				}
			},
		})
	}
	return out
}

// TestKill37DeadLetterTakenRestartedOnPostgres is deadletter.taken of
// TestCrashAtEveryDurablePoint over PostgreSQL, the killed instance
// started again under its name (TestDeadLetterTakenByAKilledInstanceOnPostgres
// lets another instance take over): the new life's recovery of the old
// one gives the dead letter back, open, once the old life is dead, as
// the taker was recorded with the take.
func TestKill37DeadLetterTakenRestartedOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	var cases []durablePoint
	for _, tc := range pointCases() {
		if tc.point == "deadletter.taken" {
			check := tc.check
			tc.check = func(t *testing.T, h *crashRun) {
				for range 600 { // given back by the recovery of the dead life, which recovered waited for
					if dl := h.deadLetters(t); len(dl) == 1 && slices.Contains(slices.Collect(maps.Values(dl)), "open") {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				check(t, h)
			}
			cases = append(cases, tc)
		}
	}
	pg := pgtest.Own(t)
	runs(t, func(t *testing.T) string {
		url, err := pg.CreateDatabase(t.Context(), "taken37")
		if err != nil {
			t.Fatal(err)
		}
		return url
	}, cases)
}

// TestKill37UndoClaimedOnPostgres is claimed#4 of TestCrashAtEveryDurablePoint
// over PostgreSQL, where a claim commits before its checkpoint (docs/STATE.md,
// row "1 and 2"): a stop's compensation cut off at the older leg's undo's
// claim, the newer leg's undo done. The undo cut off never ran (no
// checkpoint): the recovery of the dead life runs it, once, and nothing is
// dead-lettered; the newer leg is not undone again. Once through the
// instance started again under its name, once through a survivor.
func TestKill37UndoClaimedOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	var cases []durablePoint
	for _, tc := range pointCases() {
		if tc.point == "claimed#4" {
			tc.check = func(t *testing.T, h *crashRun) {
				if s := h.state(t, "r"); !strings.HasPrefix(s, "stopped") {
					t.Errorf("request r is %s; want it stopped", s)
				}
				for _, leg := range []string{"1/1", "1/2"} {
					if n := h.counts(func(fx *sideEffects) int { return fx.undone[leg] }); n != 1 {
						t.Errorf("leg %s was undone %d times; want 1", leg, n)
					}
				}
				if dl := h.deadLetters(t); len(dl) != 0 {
					t.Errorf("dead letters: %v; want none (the undo cut off at its claim never ran: the recovery ran it)", dl)
				}
			}
			cases = append(cases, tc)
		}
	}
	pg := pgtest.Own(t)
	n := 0
	db := func(t *testing.T) string {
		n++
		url, err := pg.CreateDatabase(t.Context(), fmt.Sprint("undoclaimed", n))
		if err != nil {
			t.Fatal(err)
		}
		return url
	}
	t.Run("restarted", func(t *testing.T) { runs(t, db, cases) })
	t.Run("survivor", func(t *testing.T) { survivorRuns(t, db, cases) })
}
