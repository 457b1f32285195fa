package main

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
)

// TestKill35ApprovalAuditedOnce kills a real `reach serve` (kill -9) at
// approval.audited: an approval's action (asked, approved, denied, used)
// is in the store and its audit event appended, its mark not cleared yet.
// The restart finds the event in the audit log and appends none: the log
// holds the action once, after the restart and after a second one, and
// the chain verifies. Before, the restart audited it a second time.
func TestKill35ApprovalAuditedOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	killApprovalAuditedOnce(t, nil)
}

// TestKill35ApprovalAuditedOnceOnPostgres is TestKill35ApprovalAuditedOnce
// with the store in PostgreSQL (one instance, restarted under its name).
func TestKill35ApprovalAuditedOnceOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	killApprovalAuditedOnce(t, pgDatabaseEach(pgtest.Own(t), "kill35_"))
}

func killApprovalAuditedOnce(t *testing.T, pg func(t *testing.T) string) {
	// The nth approval.audited: each action of the approval is one, in
	// the order they are taken (asked first).
	for _, tc := range []struct {
		action string
		nth    int
	}{
		{"requested", 1},
		{"approved", 2},
		{"denied", 2},
		{"used", 3},
	} {
		t.Run(tc.action, func(t *testing.T) {
			h, cfg, addr, where := approvalCrash(t, pg)
			id := ""
			h.kill(t, cfg, addr, fmt.Sprint("approval.audited#", tc.nth), driveApproval(tc.action, "r35", "c35", &id))
			cmd := startReach(t, cfg, addr, h.data)
			killAtEnd(t, cmd)
			if tc.action == "requested" { // the call, repeated with its key, finds it
				id = h.ask(t, "", "c35")
			}
			if id == "" {
				t.Fatal("no approval was asked for")
			}
			audited := func() (n int, again int) {
				msgs := approvalAudits(t, h.base, "r35", tc.action, id)
				for _, msg := range msgs {
					if strings.Contains(msg, "audited at a restart") {
						again++
					}
				}
				return len(msgs), again
			}
			if n, again := audited(); n != 1 || again != 0 {
				t.Errorf("after the restart the audit log holds %d %s events of %s (%d audited at the restart); want 1, the first: %v",
					n, tc.action, id, again, fw33bAudit(t, h.base, "request=r35"))
			}
			if tc.action == "used" || tc.action == "approved" {
				if res := call(t, h.base, closeAccount("", "c35")); res.Status != "success" {
					t.Errorf("the approved call, repeated, got %+v; want it to run", res)
				}
				h.ranOnce(t, "c35")
			}
			stopServe(t, cmd, os.Interrupt)
			cmd = startReach(t, cfg, addr, h.data)
			killAtEnd(t, cmd)
			if n, _ := audited(); n != 1 {
				t.Errorf("after a second restart the audit log holds %d %s events of %s; want 1", n, tc.action, id)
			}
			stopServe(t, cmd, os.Interrupt)
			if out, errOut, err := runCmd(t, newAudit, append([]string{"verify"}, where...)...); err != nil || !strings.Contains(out, "chain ok") {
				t.Errorf("reach audit verify: %v\n%s%s", err, out, errOut)
			}
		})
	}
}

// TestKill35DeadInstanceAuditedBySurvivorOnPostgres: two `reach serve`
// on one PostgreSQL. A high-risk call asked through a is denied through
// b, which is killed (kill -9) once the denial is durable and before it
// is audited (approval.denied), and never started again. a, once b's life
// is dead (instance_ttl), takes over b's unaudited denial and audits it,
// once, saying by whom and why; the chain verifies. Before, only b,
// started again under its name, audited it: the denial was in no audit
// event.
func TestKill35DeadInstanceAuditedBySurvivorOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleetWith(t, "")
	out := postTo(t, f.base(0)+"/v1/calls", `{"tool_calls":[{"call_id":"w","tool":"up__wipe","arguments":{"key":"w"},"idempotency_key":"wipe-35"}]}`)
	r, _ := out["results"].([]any)
	if len(r) != 1 {
		t.Fatalf("the wipe through a: %v", out)
	}
	res := r[0].(map[string]any)
	e, _ := res["error"].(map[string]any)
	msg, _ := e["message"].(string)
	id := approvalID.FindString(msg)
	if res["status"] != "pending" || id == "" {
		t.Fatalf("the wipe through a: %v; want it pending, naming its approval", res)
	}
	f.stop(1)
	var reached <-chan struct{}
	f.cmd[1], reached = startReachAt(t, f.cfg[1], f.addr[1], f.data[1], "approval.denied")
	go func() { // cut off by the kill
		if resp, err := (&http.Client{Timeout: time.Minute}).Post(f.base(1)+"/v1/approvals/"+id+"/deny", "application/json", strings.NewReader(`{"reason":"not today"}`)); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("b never reached approval.denied")
	}
	f.kill(1) // for good
	ap := getJSONTB(t, f.base(0)+"/v1/approvals/"+id)
	request, _ := ap["request"].(string)
	st, err := postgres.Open(t.Context(), f.url, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	denials := func() (n int, msgs []string) {
		for _, ev := range fw33bAudit(t, f.base(0), "request="+request) {
			ev, _ := ev["event"].(map[string]any)
			if m, _ := ev["message"].(string); ev["kind"] == "approval" && ev["decision"] == "denied" && strings.Contains(m, id) {
				n++
				msgs = append(msgs, m)
			}
		}
		return n, msgs
	}
	// a adopts once b's life is judged dead: wait for the mark to clear.
	cleared := false
	for range 1200 {
		ar, err := st.GetApproval(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(ar.Data), `"unaudited"`) {
			cleared = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !cleared {
		t.Fatal("the dead instance's unaudited denial was never taken over")
	}
	n, msgs := denials()
	if n != 1 || !strings.Contains(msgs[0], "not today") || !strings.Contains(msgs[0], "instance b stopped") {
		t.Errorf("the audit log holds %d denials of %s (%q); want 1, its reason, saying a audited it for b", n, id, msgs)
	}
	if n := f.up.count("wipe w"); n != 0 {
		t.Errorf("the denied call ran %d times", n)
	}
	if _, err := audit.Verify(t.Context(), st); err != nil {
		t.Errorf("audit chain: %v", err)
	}
}
