package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// reach approvals --help says who must approve what as the gateway
// decides it: without auth a write runs at once (it said "writes: the
// user's", which holds with auth and the shipped policies only), and the
// help names both cases.
func TestApprovalsHelpMatchesGateway(t *testing.T) {
	base, _, _ := startServe(t, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	resp, err := http.Post(base+"/v1/calls", "application/json", strings.NewReader(
		`{"tool_calls":[{"call_id":"c1","tool":"refund_order","arguments":{"order_id":"1001","amount":5,"reason":"broken kettle"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"status":"success"`) {
		t.Fatalf("a write without auth: %s; want it run at once", body)
	}
	var help strings.Builder
	if err := run(t.Context(), []string{"approvals", "--help"}, &help, io.Discard); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(help.String()), " ")
	for _, want := range []string{
		"Without auth, a high-risk call waits for the local user (reads and writes run)",
		"with auth and the shipped policies, a write waits for its user and a high-risk call for its user and a reviewer",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("reach approvals --help:\n%s\nwant %q", help.String(), want)
		}
	}
}
