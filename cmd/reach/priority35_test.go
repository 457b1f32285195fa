package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestRequestsShowPriority (R8): a request's priority, when it is not the
// default, is shown by reach requests list (a PRIORITY column, there only
// when a request listed has one), reach requests show (the API's
// "priority") and reach graph (the JSON's, the DOT's caption): the
// local user's request lowered to -1 by Reach-Priority shows -1, the
// other none.
func TestRequestsShowPriority(t *testing.T) {
	base, _, _ := startServe(t, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	call := func(id, priority string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/v1/calls", strings.NewReader(`{"request_id":"`+id+`","tool_calls":[{"call_id":"c","tool":"search_kb","arguments":{"query":"q"}}]}`))
		req.Header.Set("Content-Type", "application/json")
		if priority != "" {
			req.Header.Set("Reach-Priority", priority)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("call in %s: %d", id, resp.StatusCode)
		}
	}
	call("plain", "")
	out, _, err := runCmd(t, newRequests, "list", "--api", base)
	if err != nil || strings.Contains(out, "PRIORITY") {
		t.Errorf("requests list, no request of another priority than 0: %v\n%s", err, out)
	}
	call("bulk", "-1")
	out, _, err = runCmd(t, newRequests, "list", "--api", base)
	if err != nil || !regexp.MustCompile(`(?m)^ID\s+STATE\s+PRINCIPAL\s+PRIORITY\s+AGENT\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^bulk\s+idle\s+local\s+-1\s+api\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^plain\s+idle\s+local\s+0\s+api\s`).MatchString(out) {
		t.Errorf("requests list:\n%s (%v)", out, err)
	}
	for id, want := range map[string]float64{"bulk": -1, "plain": 0} {
		out, _, err = runCmd(t, newRequests, "show", id, "--api", base)
		var got map[string]any
		if err != nil || json.Unmarshal([]byte(out), &got) != nil {
			t.Fatalf("requests show %s: %v\n%s", id, err, out)
		}
		p, _ := got["priority"].(float64)
		if _, ok := got["priority"]; p != want || ok != (want != 0) {
			t.Errorf("requests show %s: priority %v, want %v (left out when 0)", id, got["priority"], want)
		}
		out, _, err = runCmd(t, newGraph, id, "--api", base, "--format", "json")
		if err != nil || json.Unmarshal([]byte(out), &got) != nil {
			t.Fatalf("graph %s: %v\n%s", id, err, out)
		}
		if p, _ := got["priority"].(float64); p != want {
			t.Errorf("graph %s --format json: priority %v, want %v", id, got["priority"], want)
		}
		out, _, err = runCmd(t, newGraph, id, "--api", base, "--format", "dot")
		if caption := `label="request bulk: priority -1"`; err != nil || strings.Contains(out, caption) != (id == "bulk") {
			t.Errorf("graph %s --format dot (want the caption %s: %v): %v\n%s", id, caption, id == "bulk", err, out)
		}
	}
}
