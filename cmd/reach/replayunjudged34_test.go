package main

import (
	"strings"
	"testing"
)

// reach audit replay of a request whose call the gateway refused for its
// arguments (refund_order without its reason: the validate guard) printed
// "recorded refused, now allowed" under the access levels: the log holds no
// schemas, so the replay lets the call through, and a user read that the
// policy change they tried would let it run. A refusal the replay cannot
// decide again (arguments against a schema, a tool unknown then, a stop, a
// rate limit, a budget the log does not hold) is now left out of the
// comparison, and a note says how many and why; the policies' refusals are
// still compared.
func TestAuditReplayLeavesOutWhatItCannotJudge(t *testing.T) {
	data := t.TempDir()
	base, stop, _ := startServe(t, "--data", data, "--listen", "127.0.0.1:0")
	got := getJSON(t, "POST", base+"/v1/calls", `{"request_id":"rj","tool_calls":[
		{"call_id":"c1","tool":"get_order","arguments":{"order_id":"1001"}},
		{"call_id":"c2","tool":"refund_order","arguments":{"order_id":"1001","amount":5}},
		{"call_id":"c3","tool":"get_ordr","arguments":{"order_id":"1001"}}]}`)
	if got["request_id"] != "rj" {
		t.Fatalf("calls: %v", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "audit", "replay", "rj", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "now allowed") || !strings.Contains(out, "0 of ") {
		t.Errorf("replay of a request refused for its arguments:\n%s\nwant no difference", out)
	}
	if !strings.Contains(out, "not decided again") || !strings.Contains(out, "invalid_arguments") {
		t.Errorf("replay:\n%s\nwant a note naming the refusals left out and why", out)
	}
	// A policy's refusal is still compared: get_order forbidden now.
	out, err = runCLI(t, "audit", "replay", "rj", "--data", data, "--policy", writePolicy(t, `permit(principal, action, resource);
forbid(principal, action, resource == Reach::Tool::"get_order");`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "get_order") || !strings.Contains(out, "recorded allowed, now refused") {
		t.Errorf("replay under a policy that forbids get_order:\n%s\nwant its call now refused", out)
	}
}
