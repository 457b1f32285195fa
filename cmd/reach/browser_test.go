package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// browserDeps finds Debian's chromium and the playwright-core that
// scripts/browser-deps.sh installs; without them the test skips, saying
// why, or fails under REACH_CI (make test).
func browserDeps(t *testing.T) (chromium, node, pw string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a browser")
	}
	dir := os.Getenv("REACH_BROWSER_CACHE")
	if dir == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".cache", "browser")
	}
	pw = filepath.Join(dir, "node_modules", "playwright-core")
	missing := func(what string) {
		t.Helper()
		if os.Getenv("REACH_CI") != "" {
			t.Fatalf("%s is missing: run scripts/browser-deps.sh (make test does)", what)
		}
		t.Skipf("%s is missing: run scripts/browser-deps.sh (make test does)", what)
	}
	var err error
	if chromium, err = exec.LookPath("chromium"); err != nil {
		missing("chromium")
	}
	if node, err = exec.LookPath("node"); err != nil {
		missing("node")
	}
	if _, err := os.Stat(pw); err != nil {
		missing(pw)
	}
	return chromium, node, pw
}

// TestBrowserAfterRestart drives the UI of a real `reach serve` in a real
// browser after a kill -9 and a restart on the same data folder: the
// requests of the earlier run are listed with their states; of two
// high-risk calls the kill left pending, the one the agent's idempotency
// key still finds is approved in the inbox, and the agent's call, made
// again in a new request, then runs exactly once; the one without a key,
// whose request can no longer go on, is shown ended with why, and no
// decision is offered on it; the audit page's links to the earlier run's
// requests open.
func TestBrowserAfterRestart(t *testing.T) {
	chromium, node, pw := browserDeps(t)
	c := &counter{runs: map[string]int{}}
	up := shopUpstream(t, c)
	cfg := writeConfig(t, `upstreams:
  - {name: shop, url: '`+up+`'}
tools:
  shop__search: {access: read}
  shop__book: {access: write}
  shop__close: {access: high_risk}
`)
	data, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	cmd := startReach(t, cfg, addr, data)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	env := func(req, id, tool, arg, key string) string {
		k := ""
		if key != "" {
			k = `,"idempotency_key":"` + key + `"`
		}
		return `{"request_id":"` + req + `","tool_calls":[{"call_id":"` + id + `","tool":"shop__` + tool + `","arguments":{"id":"` + arg + `"}` + k + `}]}`
	}
	for _, r := range []struct{ req, id, tool string }{{"trip", "s1", "search"}, {"trip", "b1", "book"}, {"halt", "s1", "search"}} {
		if res := call(t, base, env(r.req, r.id, r.tool, "x", "")); res.Status != "success" {
			t.Fatalf("%s %s: %+v", r.req, r.tool, res)
		}
	}
	for _, p := range []string{"/v1/requests/trip/end", "/v1/requests/halt/cancel"} {
		resp, err := http.Post(base+p, "application/json", strings.NewReader(`{"mode":"cancel","reason":"wrong shop"}`))
		if err != nil {
			t.Fatalf("POST %s: %v", p, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s: %s", p, resp.Status)
		}
	}
	if res := call(t, base, env("ask", "c1", "close", "x", "close-42")); res.Status != "pending" {
		t.Fatalf("the high-risk call with a key: %+v, want pending", res)
	}
	if res := call(t, base, env("ask", "c2", "close", "y", "")); res.Status != "pending" {
		t.Fatalf("the high-risk call without a key: %+v, want pending", res)
	}

	cmd.Process.Kill() // kill -9, both approvals pending
	cmd.Wait()
	cmd = startReach(t, cfg, addr, data)

	_, body := get(t, base+"/v1/approvals")
	var list struct {
		Approvals []struct {
			ID, Status, Note string
			Arguments        json.RawMessage
		}
	}
	json.Unmarshal([]byte(body), &list)
	var keyed, keyless string
	for _, a := range list.Approvals {
		switch {
		case strings.Contains(string(a.Arguments), `"x"`):
			keyed = a.ID
			if a.Status != "pending" {
				t.Errorf("the approval the key finds, after the restart: %s, want pending", a.Status)
			}
		case strings.Contains(string(a.Arguments), `"y"`):
			keyless = a.ID
			if a.Status != "expired" || !strings.Contains(a.Note, "interrupted") {
				t.Errorf("the approval no call can use, after the restart: %s %q, want expired, saying why", a.Status, a.Note)
			}
		}
	}
	if keyed == "" || keyless == "" {
		t.Fatalf("approvals after the restart: %s", body)
	}

	script, _ := filepath.Abs("testdata/restart-browser.js")
	run := exec.CommandContext(t.Context(), node, script)
	run.Env = append(os.Environ(), "BASE="+base, "CHROMIUM="+chromium, "PW="+pw, "KEYED="+keyed, "KEYLESS="+keyless)
	run.Stderr = os.Stderr
	out, err := run.Output()
	if err != nil {
		t.Fatalf("browser script: %v\n%s", err, out)
	}
	var saw struct {
		Error                   string
		States                  map[string]string
		KeyedState, Flash       string
		KeylessState            string
		KeylessText, KeyedVotes string
		KeylessForms            int
		ReasonKept              string
		AuditLinks              map[string]int
	}
	if err := json.Unmarshal(out, &saw); err != nil {
		t.Fatalf("browser script's output: %v\n%s", err, out)
	}
	if saw.Error != "" {
		t.Fatalf("in the browser: %s", saw.Error)
	}
	for req, want := range map[string]string{"trip": "done", "halt": "stopped (cancel)", "ask": "stopped (interrupted)"} {
		if got := saw.States[req]; got != want {
			t.Errorf("the requests page after the restart shows %s %q, want %q (all: %v)", req, got, want, saw.States)
		}
	}
	if saw.ReasonKept != "checked after the restart" {
		t.Errorf("the approval's reason after a live update of the page: %q, want what was typed", saw.ReasonKept)
	}
	if saw.KeyedState != "pending" || saw.Flash == "" || !strings.Contains(saw.KeyedVotes, "checked after the restart") {
		t.Errorf("approving in the inbox after the restart: was %q, flash %q, votes %q", saw.KeyedState, saw.Flash, saw.KeyedVotes)
	}
	if saw.KeylessState != "expired" || !strings.Contains(saw.KeylessText, "interrupted") || saw.KeylessForms != 0 {
		t.Errorf("the approval no call can use: %q, %d forms to decide it, text %q", saw.KeylessState, saw.KeylessForms, saw.KeylessText)
	}
	for _, req := range []string{"trip", "halt", "ask"} {
		if saw.AuditLinks["/ui/requests/"+req] != 200 {
			t.Errorf("the audit page's link to %s: %v", req, saw.AuditLinks)
		}
	}
	// The agent makes its call again, with its key, in a new request: it
	// runs once, and once only.
	for i := range 2 {
		if res := call(t, base, env("", "c9", "close", "x", "close-42")); res.Status != "success" || res.Replayed != (i > 0) {
			t.Errorf("repeat %d of the approved call: %+v %+v", i, res, res.Error)
		}
	}
	// The call without a key: refused in its interrupted request, asking
	// again in a new one; neither runs it.
	if res := call(t, base, env("ask", "c2", "close", "y", "")); res.Error == nil || res.Error.Code != "request_interrupted" {
		t.Errorf("the call without a key in its interrupted request: %+v %+v", res, res.Error)
	}
	if res := call(t, base, env("again", "c2", "close", "y", "")); res.Status != "pending" {
		t.Errorf("the call without a key in a new request: %+v %+v, want pending (a new approval)", res, res.Error)
	}
	if n := c.n("close"); n != 1 {
		t.Errorf("the high-risk calls ran %d times, want once", n)
	}
}
