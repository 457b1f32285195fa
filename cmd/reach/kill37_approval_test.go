package main

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store/postgres"
)

// TestKill37PausedAfterClaimOnPostgres: two instances of reach serve on
// one PostgreSQL; b approves a call asked through a, claims the
// approval's mark and stops there before its audit event
// (approval.claimed, SIGSTOP); a takes b for dead and audits the approval
// for it; b is continued and appends its event. The audit log holds the
// approval once, its chain verifies, and the approved call, repeated
// through a, runs once. Before, the log held the approval twice.
func TestKill37PausedAfterClaimOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleetWith(t, "")
	call := func() map[string]any {
		out := postTo(t, f.base(0)+"/v1/calls", `{"tool_calls":[{"call_id":"w","tool":"up__wipe","arguments":{"key":"w"},"idempotency_key":"wipe-37"}]}`)
		r, _ := out["results"].([]any)
		if len(r) != 1 {
			t.Fatalf("the wipe through a: %v", out)
		}
		return r[0].(map[string]any)
	}
	res := call()
	e, _ := res["error"].(map[string]any)
	msg, _ := e["message"].(string)
	id := approvalID.FindString(msg)
	if res["status"] != "pending" || id == "" {
		t.Fatalf("the wipe through a: %v; want it pending, naming its approval", res)
	}
	f.stop(1)
	var reached <-chan struct{}
	f.cmd[1], reached = startReachAt(t, f.cfg[1], f.addr[1], f.data[1], "approval.claimed#1+go")
	stopped := false
	t.Cleanup(func() {
		if stopped {
			f.cmd[1].Process.Signal(syscall.SIGCONT)
		}
	})
	approved := make(chan struct{})
	go func() {
		defer close(approved)
		if resp, err := (&http.Client{Timeout: 2 * time.Minute}).Post(f.base(1)+"/v1/approvals/"+id+"/approve", "application/json", strings.NewReader(`{"reason":"ok"}`)); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-reached:
		stopped = true
	case <-time.After(time.Minute):
		t.Fatal("b never reached approval.claimed")
	}
	ap := getJSONTB(t, f.base(0)+"/v1/approvals/"+id)
	request, _ := ap["request"].(string)
	st, err := postgres.Open(t.Context(), f.url, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	approvals := func() (n int) {
		for _, ev := range fw33bAudit(t, f.base(0), "request="+request) {
			ev, _ := ev["event"].(map[string]any)
			if m, _ := ev["message"].(string); ev["kind"] == "approval" && ev["decision"] == "approved" && strings.Contains(m, id) {
				n++
			}
		}
		return n
	}
	// a takes the approval over once b's life is judged dead, and audits it.
	for i := 0; approvals() == 0; i++ {
		if i == 1200 {
			t.Fatal("b's claimed approval was never taken over by a")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := f.cmd[1].Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	<-approved // b went on past its claim: its append is done or refused
	f.stop(1)
	if n := approvals(); n != 1 {
		t.Errorf("the audit log holds the approval %s %d times; want once", id, n)
	}
	if res := call(); res["status"] != "success" {
		t.Fatalf("the approved wipe repeated through a: %v", res)
	}
	if res := call(); res["status"] != "success" {
		t.Fatalf("the approved wipe repeated again: %v", res)
	}
	if n := f.up.count("wipe w"); n != 1 {
		t.Errorf("the approved wipe ran %d times; want once", n)
	}
	if _, err := audit.Verify(t.Context(), st); err != nil {
		t.Errorf("audit chain: %v", err)
	}
}
