package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
)

// TestAppr38ApprovalsAcrossInstances drives approvals as a user would,
// through two `reach serve` on one PostgreSQL (a and b), approvals expiring
// after 3 s: a high-risk write asked on a and denied on b is refused on a
// with b's reason, never run, its denial audited once; one asked on a,
// approved with `reach approvals approve` on b while a is stopped, runs
// once when the agent repeats it on a after a's restart (its retry, on b,
// answered the recorded result); one decided on b while the database is
// down is told not recorded, to be decided again, and decided again once
// it is back runs once; one nobody decides expires: deciding it
// then is refused (409, saying the agent's next call asks again), and the
// agent's next call asks again, under a new approval, nothing run.
func TestAppr38ApprovalsAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	top := t
	pg := pgtest.Own(t)
	url, err := pg.CreateDatabase(context.Background(), "appr38")
	if err != nil {
		t.Fatal(err)
	}
	up, upURL := sharedUpstream(t)
	var cfg, addr, data, base [2]string
	for i, name := range []string{"a", "b"} {
		addr[i], data[i] = freeAddr(t), t.TempDir()
		base[i] = "http://" + addr[i]
		cfg[i] = writeConfig(t, fmt.Sprintf(`store: %s
instance: %s
instance_ttl: 2s
approvals: {ttl: 3s}
upstreams:
  - {name: up, url: '%s'}
budgets:
  default: {tool_calls: 1000, wall: 1h}
`, url, name, upURL))
	}
	a := startReach(t, cfg[0], addr[0], data[0])
	b := startReach(t, cfg[1], addr[1], data[1])
	t.Cleanup(func() {
		for _, c := range []**exec.Cmd{&a, &b} {
			if *c != nil {
				stopServe(t, *c, syscall.SIGTERM)
			}
		}
	})
	wipe := func(i int, request, key string) map[string]any {
		t.Helper()
		return callHTTP(t, base[i], request, "w", "up__wipe", fmt.Sprintf(`{"key":%q}`, key), key)
	}
	asked := func(r map[string]any) string {
		t.Helper()
		e, _ := r["error"].(map[string]any)
		msg, _ := e["message"].(string)
		id := approvalID.FindString(msg)
		if r["status"] != "pending" || id == "" {
			t.Fatalf("the high-risk call: %v; want it pending, naming its approval", r)
		}
		return id
	}

	t.Run("denied elsewhere", func(t *testing.T) {
		id := asked(wipe(0, "r38-deny", "d1"))
		if out := postTo(t, base[1]+"/v1/approvals/"+id+"/deny", `{"reason":"not on a friday"}`); out["status"] != "denied" {
			t.Fatalf("denying on b: %v", out)
		}
		r := wipe(0, "r38-deny", "d1")
		e, _ := r["error"].(map[string]any)
		if msg, _ := e["message"].(string); r["status"] == "success" || r["status"] == "pending" || !strings.Contains(msg, "not on a friday") {
			t.Fatalf("the denied call repeated on a: %v; want it refused with b's reason", r)
		}
		if n := up.count("wipe d1"); n != 0 {
			t.Fatalf("the denied call ran %d times", n)
		}
		if n := len(approvalAudits(t, base[0], "r38-deny", "denied", id)); n != 1 {
			t.Errorf("the denial is audited %d times; want once", n)
		}
	})

	t.Run("approved while the asking instance is down", func(t *testing.T) {
		id := asked(wipe(0, "r38-restart", "r1"))
		stopServe(t, a, syscall.SIGTERM)
		a = nil
		out, errOut, err := runCmd(t, newApprovals, "approve", id, "--reason", "fine", "--api", base[1])
		if err != nil || !strings.Contains(out, "approved") {
			t.Fatalf("reach approvals approve on b: %v\n%s%s", err, out, errOut)
		}
		a = startReach(top, cfg[0], addr[0], data[0]) // serving on in the next subtests
		if r := wipe(0, "r38-restart-2", "r1"); r["status"] != "success" {
			t.Fatalf("the approved call repeated on a after its restart: %v", r)
		}
		if r := wipe(1, "r38-restart-3", "r1"); r["status"] != "success" {
			t.Fatalf("its retry on b: %v", r)
		}
		if n := up.count("wipe r1"); n != 1 {
			t.Fatalf("the approved call ran %d times; want once", n)
		}
	})

	t.Run("decided while the database is down", func(t *testing.T) {
		id := asked(wipe(0, "r38-down", "o1"))
		if st, body := get(t, base[1]+"/v1/approvals/"+id); st != http.StatusOK { // b knows it
			t.Fatalf("GET the approval on b: %d %s", st, body)
		}
		if err := pg.Halt("fast"); err != nil {
			t.Fatal(err)
		}
		out, errOut, err := runCmd(t, newApprovals, "approve", id, "--api", base[1])
		if rerr := pg.Resume(); rerr != nil {
			t.Fatal(rerr)
		}
		if err == nil || !strings.Contains(err.Error(), "not recorded") || !strings.Contains(err.Error(), "decide it again") {
			t.Fatalf("reach approvals approve with the database down: %v\n%s%s; want it told not recorded, and to decide it again", err, out, errOut)
		}
		var got error
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if _, _, got = runCmd(t, newApprovals, "approve", id, "--api", base[1]); got == nil {
				break
			}
		}
		if got != nil {
			t.Fatalf("reach approvals approve once the database is back: %v", got)
		}
		var r map[string]any
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			// As an agent told "the shared store did not answer; try
			// again in a moment" does, while a reconnects.
			out := postTo(t, base[0]+"/v1/calls", `{"request_id":"r38-down-2","tool_calls":[{"call_id":"w","tool":"up__wipe","arguments":{"key":"o1"},"idempotency_key":"o1"}]}`)
			if rs, _ := out["results"].([]any); len(rs) == 1 {
				if r = rs[0].(map[string]any); errCode(r) != "store_unavailable" {
					break
				}
			}
		}
		if r["status"] != "success" {
			t.Fatalf("the call approved once the database is back, repeated on a: %v", r)
		}
		if n := up.count("wipe o1"); n != 1 {
			t.Fatalf("the approved call ran %d times; want once", n)
		}
	})

	t.Run("expired", func(t *testing.T) {
		id := asked(wipe(0, "r38-expire", "e1"))
		status := ""
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && status != "expired"; time.Sleep(200 * time.Millisecond) {
			st, body := get(t, base[1]+"/v1/approvals/"+id)
			if st != http.StatusOK {
				t.Fatalf("GET the approval on b: %d %s", st, body)
			}
			var v struct{ Status string }
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				t.Fatal(err)
			}
			status = v.Status
		}
		if status != "expired" {
			t.Fatalf("the undecided approval is %s a minute on; want expired", status)
		}
		out := postTo(t, base[1]+"/v1/approvals/"+id+"/approve", `{}`)
		e, _ := out["error"].(map[string]any)
		if s, _ := e["suggestion"].(string); e["code"] != "already_decided" || !strings.Contains(s, "asked for") {
			t.Fatalf("approving the expired one on b: %v; want already_decided, saying the next call asks again", out)
		}
		again := asked(wipe(0, "r38-expire-2", "e1"))
		if again == id {
			t.Fatalf("the call after the expiry waits for the expired approval %s", id)
		}
		if n := up.count("wipe e1"); n != 0 {
			t.Fatalf("the undecided call ran %d times", n)
		}
	})
}

// TestAppr38CLIPrintsTheDecisionsNotice: `reach approvals approve` prints
// what the gateway says of how the decision was recorded (a write slow to
// confirm, which the store holds: it stands), escaped as every field.
func TestAppr38CLIPrintsTheDecisionsNotice(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"apr_1","status":"approved","requires":"user","tool":"up__wipe","arguments":{},"principal":"local","request":"r1","root_request":"r1",`+
			`"prompt":"","notice":"The store was slow to confirm this decision, and holds it: the decision stands.\u001b[2J"}`)
	}))
	defer srv.Close()
	out, errOut, err := runCmd(t, newApprovals, "approve", "apr_1", "--api", srv.URL)
	if err != nil || !strings.Contains(out, "the decision stands") || strings.Contains(out, "\x1b") {
		t.Fatalf("reach approvals approve: %v\n%q%s; want the notice, escaped", err, out, errOut)
	}
}
