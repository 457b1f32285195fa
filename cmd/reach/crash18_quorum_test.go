package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/pgtest"
)

// TestCrash18ApprovalVote kills a real `reach serve` once the first vote
// of a two-person approval is durable (approval.pending#2: the approval's
// creation is #1; a high-risk call waits for its user and a reviewer,
// docs/PERMISSIONS.md), and restarts it: the approval is still pending,
// with that vote kept (the same user's second vote is refused as already
// given, and the call does not run on it); the reviewer's vote approves
// it; the user's call, repeated, runs once, and its retry gets its
// recorded result. The audit chain verifies.
func TestCrash18ApprovalVote(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil)}
	key := func(principal, roles string) string {
		args := []string{"create", "--data", h.data, "--principal", principal}
		if roles != "" {
			args = append(args, "--roles", roles)
		}
		out, msg, err := runCmd(t, newKeys, args...)
		if err != nil {
			t.Fatalf("keys create %s: %v %s", principal, err, msg)
		}
		return strings.TrimSpace(out)
	}
	alice, bob := key("alice", ""), key("bob", "reviewer")
	cfg := writeConfig(t, "auth: {keys: true}\n"+travelYAML(sideEffectsUpstream(t, h.fx), "  travel__close: {access: high_risk}\n"))
	addr := freeAddr(t)
	h.base = "http://" + addr
	do := func(t *testing.T, key, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, h.base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	closeCall := func(t *testing.T) callResult {
		t.Helper()
		status, body := do(t, alice, "POST", "/v1/calls", closeAccount("", "c1"))
		var out struct{ Results []callResult }
		if status != 200 || json.Unmarshal([]byte(body), &out) != nil || len(out.Results) != 1 {
			t.Fatalf("the close: %d %s", status, body)
		}
		return out.Results[0]
	}
	id := ""
	h.kill(t, cfg, addr, "approval.pending#2", func(t *testing.T, h *crashRun) {
		res := closeCall(t)
		if res.Error != nil {
			id = approvalID.FindString(res.Error.Message)
		}
		if res.Status != "pending" || id == "" {
			h.note("the close was not pending: " + res.Status)
			return
		}
		h.tryPostAuth(alice, "/v1/approvals/"+id+"/approve", `{"reason":"mine"}`)
	})
	if id == "" {
		t.Fatal("no approval was asked for")
	}
	cmd := startReach(t, cfg, addr, h.data)
	killAtEnd(t, cmd)
	approval := func(t *testing.T) (string, int) {
		t.Helper()
		status, body := do(t, alice, "GET", "/v1/approvals/"+id, "")
		var a struct {
			Status string
			Votes  []struct{ By, As string }
		}
		if status != 200 || json.Unmarshal([]byte(body), &a) != nil {
			t.Fatalf("GET approval %s: %d %s", id, status, body)
		}
		return a.Status, len(a.Votes)
	}
	if st, votes := approval(t); st != "pending" || votes != 1 {
		t.Errorf("approval %s after the restart: %s with %d votes; want pending with the user's vote kept", id, st, votes)
	}
	if status, body := do(t, alice, "POST", "/v1/approvals/"+id+"/approve", `{"reason":"mine again"}`); status != 409 || !strings.Contains(body, "already_approved") {
		t.Errorf("the user's second vote after the restart: %d %s; want 409 already_approved (the first was kept)", status, body)
	}
	if res := closeCall(t); res.Status != "pending" {
		t.Errorf("the close with one vote of two, after the restart: %+v; want it still pending", res)
	}
	if n := h.counts(closedTotal); n != 0 {
		t.Errorf("the close ran %d times with one vote of two", n)
	}
	if status, body := do(t, bob, "POST", "/v1/approvals/"+id+"/approve", `{"reason":"reviewed"}`); status != 200 {
		t.Fatalf("the reviewer's vote: %d %s", status, body)
	}
	if st, votes := approval(t); st != "approved" || votes != 2 {
		t.Errorf("approval %s after the reviewer's vote: %s with %d votes; want approved with both", id, st, votes)
	}
	if res := closeCall(t); res.Status != "success" {
		t.Errorf("the approved close: %+v %+v", res, res.Error)
	}
	if res := closeCall(t); res.Status != "success" || !res.Replayed {
		t.Errorf("the approved close, retried: %+v; want its recorded result", res)
	}
	if n := h.counts(closedTotal); n != 1 {
		t.Errorf("the approved close ran %d times; want 1", n)
	}
	stopServe(t, cmd, os.Interrupt)
	if out, errOut, err := runCmd(t, newAudit, "verify", "--data", h.data); err != nil || !strings.Contains(out, "chain ok") {
		t.Errorf("reach audit verify: %v\n%s%s", err, out, errOut)
	}
}

// tryPostAuth posts body to path with key and reports whether the gateway
// answered (false once it was killed).
func (h *crashRun) tryPostAuth(key, path, body string) bool {
	req, _ := http.NewRequest("POST", h.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return true
}

// TestCrash18ApprovalVoteInstances: two instances on one PostgreSQL, with
// API keys. The user's high-risk call through a waits for the user and a
// reviewer; the user votes through a, whose answer says the vote is
// durable, and a is killed (kill -9). Through b the approval is pending
// with that vote; the reviewer's vote there approves it; the user's call,
// repeated through b, runs once; a, started again under its name, answers
// the same call with the recorded result: it ran once in all.
func TestCrash18ApprovalVoteInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := &fleet{t: t, pg: pgtest.Own(t), names: [2]string{"a", "b"}}
	var err error
	if f.url, err = f.pg.CreateDatabase(context.Background(), "reach"); err != nil {
		t.Fatal(err)
	}
	var upURL string
	f.up, upURL = sharedUpstream(t)
	for i := range 2 {
		f.addr[i], f.data[i] = freeAddr(t), t.TempDir()
	}
	key := func(principal, roles string) string {
		args := []string{"create", "--data", f.data[0], "--principal", principal}
		if roles != "" {
			args = append(args, "--roles", roles)
		}
		out, msg, err := runCmd(t, newKeys, args...)
		if err != nil {
			t.Fatalf("keys create %s: %v %s", principal, err, msg)
		}
		return strings.TrimSpace(out)
	}
	alice, bob := key("alice", ""), key("bob", "reviewer")
	keys, err := os.ReadFile(auth.KeysPath(f.data[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(auth.KeysPath(f.data[1]), keys, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		f.cfg[i] = writeConfig(t, fmt.Sprintf(`auth: {keys: true}
store: %s
instance: %s
instance_ttl: 2s
upstreams:
  - {name: up, url: '%s'}
`, f.url, f.names[i], upURL))
		f.start(i)
	}
	t.Cleanup(func() {
		for i := range 2 {
			f.stop(i)
		}
	})
	do := func(t *testing.T, i int, key, method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, f.base(i)+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		var out map[string]any
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &out)
		return resp.StatusCode, out
	}
	wipe := func(t *testing.T, i int) map[string]any {
		t.Helper()
		status, out := do(t, i, alice, "POST", "/v1/calls",
			`{"tool_calls":[{"call_id":"w","tool":"up__wipe","arguments":{"key":"w"},"idempotency_key":"wipe-1"}]}`)
		r, _ := out["results"].([]any)
		if status != 200 || len(r) != 1 {
			t.Fatalf("the wipe through %s: %d %v", f.names[i], status, out)
		}
		return r[0].(map[string]any)
	}
	res := wipe(t, 0)
	e, _ := res["error"].(map[string]any)
	msg, _ := e["message"].(string)
	id := approvalID.FindString(msg)
	if res["status"] != "pending" || id == "" {
		t.Fatalf("the wipe through a: %v; want it pending, naming its approval", res)
	}
	if status, out := do(t, 0, alice, "POST", "/v1/approvals/"+id+"/approve", `{"reason":"mine"}`); status != 200 || out["status"] != "pending" {
		t.Fatalf("the user's vote through a: %d %v; want it recorded, the approval pending", status, out)
	}
	f.kill(0)
	status, out := do(t, 1, alice, "GET", "/v1/approvals/"+id, "")
	if votes, _ := out["votes"].([]any); status != 200 || out["status"] != "pending" || len(votes) != 1 {
		t.Errorf("the approval through b after a's kill: %d %v; want it pending with the user's vote", status, out)
	}
	if status, out := do(t, 1, alice, "POST", "/v1/approvals/"+id+"/approve", `{"reason":"mine again"}`); status != 409 {
		t.Errorf("the user's second vote through b: %d %v; want 409 (the first was kept)", status, out)
	}
	if status, out := do(t, 1, bob, "POST", "/v1/approvals/"+id+"/approve", `{"reason":"reviewed"}`); status != 200 || out["status"] != "approved" {
		t.Fatalf("the reviewer's vote through b: %d %v", status, out)
	}
	if r := wipe(t, 1); r["status"] != "success" {
		t.Errorf("the approved wipe through b: %v", r)
	}
	f.start(0)
	if r := wipe(t, 0); r["status"] != "success" {
		t.Errorf("the approved wipe repeated through a, started again: %v; want its recorded result", r)
	}
	if n := f.up.count("wipe w"); n != 1 {
		t.Errorf("the approved wipe ran %d times; want 1", n)
	}
}
