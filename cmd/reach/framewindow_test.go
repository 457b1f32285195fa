package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestServedGraphOfALongRequest: a request of more calls than reach serve
// keeps in memory shows all of them, in order, through the API, the CLI
// and the UI: the older ones read back from the store.
func TestServedGraphOfALongRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("served test skipped in -short mode")
	}
	c := &counter{runs: map[string]int{}}
	up := shopUpstream(t, c)
	cfg := writeConfig(t, `upstreams:
  - {name: shop, url: '`+up+`'}
tools:
  shop__search: {access: read}
  shop__book: {access: write}
budgets:
  default: {}
`)
	data, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	cmd := startReach(t, cfg, addr, data)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	const n = 60
	var want []string
	for i := range n {
		tool := "search"
		if i%7 == 3 {
			tool = "book"
		}
		env := fmt.Sprintf(`{"request_id":"long","tool_calls":[{"call_id":"c%d","tool":"shop__%s","arguments":{"id":"x%d"}}]}`, i, tool, i)
		if res := call(t, base, env); res.Status != "success" {
			t.Fatalf("call %d: %+v", i, res)
		}
		want = append(want, fmt.Sprintf("c%d shop__%s completed", i, tool))
	}
	out, _, err := runCmd(t, newGraph, "long", "--format", "json", "--api", base)
	var g struct {
		Frames []struct {
			CallID       string `json:"call_id"`
			Name, Status string
		}
	}
	json.Unmarshal([]byte(out), &g)
	var got []string
	for _, f := range g.Frames {
		got = append(got, fmt.Sprintf("%s %s %s", f.CallID, f.Name, f.Status))
	}
	if err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("reach graph long: %v: %d frames, want %d:\n%s", err, len(got), n, strings.Join(got, "\n"))
	}
	if status, page := get(t, base+"/ui/requests/long"); status != 200 || !strings.Contains(page, "c0") || !strings.Contains(page, fmt.Sprintf("c%d", n-1)) {
		t.Errorf("the UI's page of long: %d, lacks the first or the last call", status)
	}
}
