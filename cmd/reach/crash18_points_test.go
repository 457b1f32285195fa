package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/pgtest"
)

// crash18Points are durable points that TestCrashAtEveryDurablePoint does
// not kill at: an approved call cut off once it runs, an operator's retry
// of a dead letter cut off while its undo runs or once it is settled, and
// the audit log's export after its writer was killed. Each is checked
// after a restart as docs/STATE.md says, then by checkAll (nothing ran
// twice, no request left running, the chain verifies, no claim left).
func crash18Points() []durablePoint {
	return []durablePoint{
		{
			// The approved call let through and its checkpoint durable
			// (executing, under the key approval:<id>), its tool not
			// answered: it may have run. The agent's call, repeated after
			// the restart with its key, is not run again, and asks for no
			// second approval: it is answered interrupted.
			point: "executing#1",
			drive: func(t *testing.T, h *crashRun) {
				id := h.ask(t, "r", "c1")
				if status, out := postJSON(t, h.base+"/v1/approvals/"+id+"/approve", `{"reason":"fine"}`); status != 200 {
					t.Fatalf("approve: %d %v", status, out)
				}
				h.post("/v1/calls", closeAccount("r", "c1"))
			},
			check: func(t *testing.T, h *crashRun) {
				before := h.counts(closedTotal)
				for range 2 {
					res := call(t, h.base, closeAccount("", "c1"))
					if res.Status == "success" || res.Status == "pending" || res.Error == nil || res.Error.Code != "interrupted" {
						t.Errorf("the approved call cut off as it ran, repeated after the restart, got %+v %+v; want the error interrupted (it may have run)", res, res.Error)
					}
				}
				if after := h.counts(closedTotal); after != before {
					t.Errorf("the approved call cut off as it ran was run again after the restart (%v)", h.fx.closed)
				}
				h.noPendingApproval(t)
			},
		},
		{
			// An operator's retry of a dead letter took it, and the undo's
			// checkpoint is durable (it may have run): the restart opens
			// the dead letter again, and a second retry does not run the
			// undo again (its key answers interrupted): it stays open.
			point: "executing#3",
			drive: func(t *testing.T, h *crashRun) { h.retryFirstDeadLetter(t) },
			check: func(t *testing.T, h *crashRun) {
				dl := h.openDeadLetter(t)
				if n := h.counts(func(fx *sideEffects) int { return fx.undone["8/1"] }); n != 0 {
					t.Errorf("the undo, cut off before its tool was asked, ran %d times; want 0", n)
				}
				status, out := postJSON(t, h.base+"/v1/deadletters/"+dl+"/retry", "")
				if n := h.counts(func(fx *sideEffects) int { return fx.undone["8/1"] }); n != 0 {
					t.Errorf("the second retry ran the undo cut off at its checkpoint (%d times): %d %v", n, status, out)
				}
				if s := h.deadLetters(t)[dl]; s != "open" {
					t.Errorf("dead letter %s after a retry of an undo that may have run: %q; want it still open (%d %v)", dl, s, status, out)
				}
				// The operator, having checked by hand, dismisses it.
				if status, out := postJSON(t, h.base+"/v1/deadletters/"+dl+"/dismiss", `{"note":"checked by hand"}`); status != 200 {
					t.Errorf("dismissing dead letter %s: %d %v", dl, status, out)
				}
				if open := h.deadLetters(t); len(open) != 0 {
					t.Errorf("open dead letters after the dismissal: %v", open)
				}
			},
		},
		{
			// The retry ran the undo and settled the dead letter: it is
			// not open after the restart, the undo ran once, and a retry
			// of it is refused.
			point: "deadletter.settled",
			drive: func(t *testing.T, h *crashRun) { h.retryFirstDeadLetter(t) },
			check: func(t *testing.T, h *crashRun) {
				if dl := h.deadLetters(t); len(dl) != 0 {
					t.Errorf("open dead letters after the restart: %v; want none (retried)", dl)
				}
				if n := h.counts(func(fx *sideEffects) int { return fx.undone["8/1"] }); n != 1 {
					t.Errorf("the retried undo ran %d times; want 1", n)
				}
			},
		},
		{
			// The audit log's first batch durable, the writer killed:
			// `reach audit export` of the request reads what was kept,
			// after the restart interrupted it.
			point: "audit.appended",
			drive: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, book("r", "k1", 1, 1)); res.Status != "success" {
					t.Fatalf("booking: %+v", res)
				}
				h.post("/v1/calls", book("r", "k2", 1, 2))
			},
			check: func(t *testing.T, h *crashRun) { h.exported(t, "r") },
		},
		{
			// The same at a later batch: the request books leg after leg
			// until the gateway stops; the export holds the calls kept
			// before the kill.
			point: "audit.appended#3",
			drive: func(t *testing.T, h *crashRun) {
				for step := 1; step <= 1000 && h.tryPost("/v1/calls", book("r", fmt.Sprint("k", step), 1, step)); step++ {
				}
			},
			check: func(t *testing.T, h *crashRun) { h.exported(t, "r") },
		},
	}
}

// retryFirstDeadLetter books leg 8/1 in request r, stops r (the undo's
// first attempt fails: a dead letter), and retries the dead letter.
func (h *crashRun) retryFirstDeadLetter(t *testing.T) {
	if res := call(t, h.base, book("r", "k8", 8, 1)); res.Status != "success" {
		t.Fatalf("booking: %+v", res)
	}
	h.post("/v1/requests/r/cancel", `{"reason":"enough"}`)
	for id := range h.deadLetter(t) {
		h.post("/v1/deadletters/"+id+"/retry", "")
	}
}

// openDeadLetter returns the one dead letter listed, which must be open.
func (h *crashRun) openDeadLetter(t *testing.T) string {
	t.Helper()
	dl := h.deadLetters(t)
	if len(dl) != 1 {
		t.Fatalf("dead letters after the restart: %v; want the one undo", dl)
	}
	for id, s := range dl {
		if s != "open" {
			t.Errorf("dead letter %s is %s after the restart; want it open again", id, s)
		}
		return id
	}
	return ""
}

// noPendingApproval checks that no approval waits: a call repeated after
// its approval was used asks for none.
func (h *crashRun) noPendingApproval(t *testing.T) {
	t.Helper()
	status, body := get(t, h.base+"/v1/approvals?status=pending")
	var list struct{ Approvals []struct{ ID string } }
	if status != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list.Approvals) != 0 {
		t.Errorf("pending approvals after the repeated call: %d %s; want none", status, body)
	}
}

// exported checks that `reach audit export` of request reads the log the
// killed writer left: a trace of the request's kept calls.
func (h *crashRun) exported(t *testing.T, request string) {
	t.Helper()
	where := []string{"--data", h.data}
	if h.store != "" {
		where = []string{"--store", h.store}
	}
	out, errOut, err := runCmd(t, newAudit, append([]string{"export", request}, where...)...)
	if err != nil {
		t.Errorf("reach audit export %s: %v\n%s%s", request, err, out, errOut)
		return
	}
	var trace struct{ Events []json.RawMessage }
	if json.Unmarshal([]byte(out), &trace) != nil || len(trace.Events) == 0 {
		t.Errorf("reach audit export %s printed no trace: %s", request, out)
	}
	if !strings.Contains(out, "travel__book") {
		t.Errorf("the export of %s lacks its bookings: %s", request, out)
	}
}

// runs18 is runs with chain 8's undo failing at its first attempt only (a
// dead letter whose retry succeeds) as well as chain 9's always.
func runs18(t *testing.T, pg func(t *testing.T) string, cases []durablePoint) {
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.point, "#", "_"), func(t *testing.T) {
			var tries atomic.Int32
			fails := func(chain, _ int) bool { return chain == 9 || chain == 8 && tries.Add(1) == 1 }
			h := &crashRun{data: t.TempDir(), fx: newSideEffects(fails)}
			head := ""
			if pg != nil {
				h.store = pg(t)
				head = "store: " + h.store + "\ninstance: a\ninstance_ttl: 1s\n"
			}
			cfg := writeConfig(t, head+travelYAML(sideEffectsUpstream(t, h.fx), "  travel__close: {access: high_risk}\n"+tc.more))
			addr := freeAddr(t)
			h.base = "http://" + addr
			h.kill(t, cfg, addr, tc.point, tc.drive)
			cmd := startReach(t, cfg, addr, h.data)
			killAtEnd(t, cmd)
			if pg != nil {
				h.recovered(t)
			}
			if tc.check != nil {
				tc.check(t, h)
			}
			h.checkAll(t, cmd)
		})
	}
}

// TestCrash18Points kills a real `reach serve` at crash18Points and
// checks what the restart makes of each.
func TestCrash18Points(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	runs18(t, nil, crash18Points())
}

// TestCrash18PointsOnPostgres is TestCrash18Points over a PostgreSQL
// store (one instance restarted under its name).
func TestCrash18PointsOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	pg := pgtest.Own(t)
	n := 0
	runs18(t, func(t *testing.T) string {
		n++
		url, err := pg.CreateDatabase(t.Context(), fmt.Sprint("crash18_", n))
		if err != nil {
			t.Fatal(err)
		}
		return url
	}, crash18Points())
}

// closedTotal is how many times the high-risk close ran, under any key.
func closedTotal(fx *sideEffects) int {
	n := 0
	for _, c := range fx.closed {
		n += c
	}
	return n
}
