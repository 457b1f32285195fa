package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBrowserWalkAfterRestart walks every page of the UI of a real `reach
// serve` that a link leads to, in a real browser, after a kill -9 and a
// restart on the same data folder: requests with a refused loop, a call
// waiting for approval, a stopped request, a secret argument, and more
// audit events than a page of the audit log holds, made by an upstream
// whose URL and header carry a bearer token. No page answers an error,
// shows raw JSON, a secret (in the page or its graph), lacks
// X-Frame-Options, or has a form that posts without the form token; and
// the audit page's links lead back to the log's first event. Before, the
// audit page showed the newest 500 events with no link to the older
// ones: what the earlier run did was out of the UI's reach.
func TestBrowserWalkAfterRestart(t *testing.T) {
	chromium, node, pw := browserDeps(t)
	c := &counter{runs: map[string]int{}}
	up := shopUpstream(t, c)
	const urlToken, headerToken, argSecret = "urltok-Q7x9Zp2K", "hdrtok-W4m8Rv1L", "pw-N3k6Tq0J"
	cfg := writeConfig(t, `upstreams:
  - {name: shop, url: '`+up+`/?access_token=`+urlToken+`', headers: {Authorization: 'Bearer `+headerToken+`'}}
tools:
  shop__search: {access: read}
  shop__book: {access: write}
  shop__close: {access: high_risk}
`)
	data, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	cmd := startReach(t, cfg, addr, data)
	post := func(envelope string) {
		t.Helper()
		resp, err := http.Post(base+"/v1/calls", "application/json", strings.NewReader(envelope))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST /v1/calls: %s", resp.Status)
		}
	}
	// 12 requests of 50 searches each: 600 events, more than a page.
	for r := range 12 {
		var calls []string
		for i := range 50 {
			calls = append(calls, fmt.Sprintf(`{"call_id":"s%d","tool":"shop__search","arguments":{"id":"r%d-%d"}}`, i, r, i))
		}
		post(`{"request_id":"bulk` + fmt.Sprint(r) + `","tool_calls":[` + strings.Join(calls, ",") + `]}`)
	}
	for range 4 { // a loop, refused
		call(t, base, `{"request_id":"loop","tool_calls":[{"call_id":"l","tool":"shop__search","arguments":{"id":"same"}}]}`)
	}
	call(t, base, `{"request_id":"secret","tool_calls":[{"call_id":"p","tool":"shop__search","arguments":{"id":"x","password":"`+argSecret+`"}}]}`)
	call(t, base, `{"request_id":"halt","tool_calls":[{"call_id":"b","tool":"shop__book","arguments":{"id":"x"}}]}`)
	resp, err := http.Post(base+"/v1/requests/halt/cancel", "application/json", strings.NewReader(`{"reason":"wrong shop"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if res := call(t, base, `{"request_id":"ask","tool_calls":[{"call_id":"c","tool":"shop__close","arguments":{"id":"x"},"idempotency_key":"close-1"}]}`); res.Status != "pending" {
		t.Fatalf("the high-risk call: %+v, want pending", res)
	}

	cmd.Process.Kill() // kill -9
	cmd.Wait()
	startReach(t, cfg, addr, data)

	script, _ := filepath.Abs("testdata/walk-browser.js")
	run := exec.CommandContext(t.Context(), node, script)
	run.Env = append(os.Environ(), "BASE="+base, "CHROMIUM="+chromium, "PW="+pw, "SECRETS="+strings.Join([]string{urlToken, headerToken, argSecret}, ","))
	run.Stderr = os.Stderr
	out, err := run.Output()
	if err != nil {
		t.Fatalf("browser script: %v\n%s", err, out)
	}
	var saw struct {
		Error      string
		Pages      int
		Snags      []string
		AuditSeqs  []int64
		AuditPages int
		Left       int
		Exports    int
		Masked     bool
	}
	if err := json.Unmarshal(out, &saw); err != nil {
		t.Fatalf("browser script's output: %v\n%s", err, out)
	}
	if saw.Error != "" {
		t.Fatalf("in the browser: %s", saw.Error)
	}
	t.Logf("walked %d pages (%d left), %d of them the audit log's; the graph and exports of %d requests", saw.Pages, saw.Left, saw.AuditPages, saw.Exports)
	for _, s := range saw.Snags {
		t.Error(s)
	}
	if !saw.Masked {
		t.Errorf("the page of the request with a secret argument does not show it masked (was it walked?)")
	}
	if saw.Pages < 20 || saw.Left != 0 {
		t.Errorf("walked %d pages, %d left unwalked: want every page a link leads to", saw.Pages, saw.Left)
	}
	if len(saw.AuditSeqs) == 0 || slices.Min(saw.AuditSeqs) != 1 {
		min := int64(0)
		if len(saw.AuditSeqs) > 0 {
			min = slices.Min(saw.AuditSeqs)
		}
		t.Errorf("the audit pages' links reach back to event %d over %d pages, want the first (1)", min, saw.AuditPages)
	}
}
