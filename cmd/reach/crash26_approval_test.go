package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store/postgres"
)

// TestCrash26ApprovalDecidedElsewhere: two instances on one PostgreSQL.
// A high-risk call (up__wipe, under its key) asked through the asker
// waits for approval; the approval is decided through the other
// instance, and one of the two is killed (kill -9) at a durable point of
// the decision or of its use:
//
//   - "decider at approval.approved": the decider dies once the decision
//     is durable, before it answers; the asker, alive, finds it approved,
//     and the call repeated through it runs once;
//   - "asker at approval.used": the decision made through the decider,
//     the call repeated through the asker is let through and the asker
//     dies before its claim; the call repeated through the decider runs
//     once.
//
// After the killed instance starts again: the call, repeated through
// either, runs no more (its key's result), it ran once in all, no
// approval is left pending, and the audit chain verifies.
func TestCrash26ApprovalDecidedElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	for _, tc := range []struct {
		name   string
		point  string
		killed int // 0: the asker (a), 1: the decider (b)
	}{
		{"decider at approval.approved", "approval.approved", 1},
		{"asker at approval.used", "approval.used", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleetWith(t, "")
			wipe := func(i int) map[string]any { return wipeThrough(t, f, i, "wipe-26") }
			id := askWipe(t, f, "wipe-26")
			cut := f.dieAt(t, tc.killed, tc.point)
			if tc.killed == 1 {
				cut("/v1/approvals/"+id+"/approve", `{"reason":"fine"}`)
			} else {
				if out := postTo(t, f.base(1)+"/v1/approvals/"+id+"/approve", `{"reason":"fine"}`); out["status"] != "approved" {
					t.Fatalf("approving through b: %v", out)
				}
				cut("/v1/calls", wipeBody("wipe-26"))
			}
			alive := 1 - tc.killed
			if tc.killed == 1 {
				if out := getJSONTB(t, f.base(0)+"/v1/approvals/"+id); out["status"] != "approved" {
					t.Errorf("the approval through a once b died with its decision durable: %v; want approved", out)
				}
			}
			if r := wipe(alive); r["status"] != "success" {
				t.Errorf("the approved call repeated through %s after %s's kill: %v; want it run", f.names[alive], f.names[tc.killed], r)
			}
			f.start(tc.killed)
			for i := range 2 {
				if r := wipe(i); r["status"] != "success" {
					t.Errorf("the approved call repeated through %s after the restart: %v; want its result", f.names[i], r)
				}
			}
			if n := f.up.count("wipe w"); n != 1 {
				t.Errorf("the approved call ran %d times; want once", n)
			}
			for i := range 2 {
				list := getJSONTB(t, f.base(i)+"/v1/approvals?status=pending")
				if aps, _ := list["approvals"].([]any); len(aps) != 0 {
					t.Errorf("%s lists approvals pending after the call ran: %v", f.names[i], list)
				}
			}
			verifyFleetAudit(t, f)
		})
	}
}

// wipeBody is the call of up__wipe (key w) under the idempotency key.
func wipeBody(key string) string {
	return `{"tool_calls":[{"call_id":"w","tool":"up__wipe","arguments":{"key":"w"},"idempotency_key":"` + key + `"}]}`
}

// wipeThrough makes the call of wipeBody through instance i of f and
// returns its one result.
func wipeThrough(t *testing.T, f *fleet, i int, key string) map[string]any {
	t.Helper()
	out := postTo(t, f.base(i)+"/v1/calls", wipeBody(key))
	r, _ := out["results"].([]any)
	if len(r) != 1 {
		t.Fatalf("the wipe through %s: %v", f.names[i], out)
	}
	return r[0].(map[string]any)
}

// askWipe makes the call of wipeBody through a, which answers it
// pending, and returns the id of the approval it waits for.
func askWipe(t *testing.T, f *fleet, key string) string {
	t.Helper()
	res := wipeThrough(t, f, 0, key)
	e, _ := res["error"].(map[string]any)
	msg, _ := e["message"].(string)
	id := approvalID.FindString(msg)
	if res["status"] != "pending" || id == "" {
		t.Fatalf("the wipe through a: %v; want it pending, naming its approval", res)
	}
	return id
}

// dieAt starts instance i of f again, to die (kill -9) at the durable
// point; the function it returns sends the instance body at path, which
// the kill cuts off, and kills it once it is there.
func (f *fleet) dieAt(t *testing.T, i int, point string) func(path, body string) {
	t.Helper()
	f.stop(i)
	var reached <-chan struct{}
	f.cmd[i], reached = startReachAt(t, f.cfg[i], f.addr[i], f.data[i], point)
	return func(path, body string) {
		t.Helper()
		go func() { // cut off by the kill
			if resp, err := (&http.Client{Timeout: time.Minute}).Post(f.base(i)+path, "application/json", strings.NewReader(body)); err == nil {
				resp.Body.Close()
			}
		}()
		select {
		case <-reached:
		case <-time.After(time.Minute):
			t.Fatalf("%s never reached %s", f.names[i], point)
		}
		f.kill(i)
	}
}

// verifyFleetAudit verifies the audit chain in f's store.
func verifyFleetAudit(t *testing.T, f *fleet) {
	t.Helper()
	st, err := postgres.Open(t.Context(), f.url, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := audit.Verify(t.Context(), st); err != nil {
		t.Errorf("audit chain: %v", err)
	}
}
