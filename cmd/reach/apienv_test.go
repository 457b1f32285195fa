package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/gateway"
)

// TestAPIFromEnvironment: the commands that talk to a running gateway
// find one served on another address by $REACH_API, as they find its key
// by $REACH_API_KEY, and --api wins over it. A gateway that does not
// answer is an error that says how to name another address: it said only
// "is `reach serve` running?" (health not even that), and a user serving
// on another port read that it was not.
func TestAPIFromEnvironment(t *testing.T) {
	cfg, err := config.Parse([]byte("data: "+t.TempDir()+"\nexamples: true\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/calls", "application/json", strings.NewReader(`{"request_id":"req_env","tool_calls":[{"call_id":"c1","tool":"get_order","arguments":{"order_id":"1001"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	// An address nothing listens on, nor will (testport: below the
	// ephemeral range that listeners on port 0 of the tests beside take).
	dead := "http://" + freeAddr(t)

	t.Setenv("REACH_API", srv.URL+"/")
	if out, _, err := runCmd(t, newRequests, "list"); err != nil || !strings.Contains(out, "req_env") {
		t.Errorf("requests list with REACH_API: %v\n%s", err, out)
	}
	if out, _, err := runCmd(t, newGraph, "req_env", "--format", "json"); err != nil || !strings.Contains(out, "get_order") {
		t.Errorf("graph with REACH_API: %v\n%s", err, out)
	}
	if out, _, err := runCmd(t, newApprovals, "list"); err != nil || strings.TrimSpace(out) != "no approvals" {
		t.Errorf("approvals list with REACH_API: %v\n%s", err, out)
	}
	if out, _, err := runCmd(t, newHealth); err != nil || !strings.Contains(out, "ok") {
		t.Errorf("health with REACH_API: %v\n%s", err, out)
	}

	t.Setenv("REACH_API", dead)
	if out, _, err := runCmd(t, newRequests, "list", "--api", srv.URL); err != nil || !strings.Contains(out, "req_env") {
		t.Errorf("requests list --api over REACH_API: %v\n%s", err, out)
	}
	for name, run := range map[string]func() error{
		"requests list": func() error { _, _, err := runCmd(t, newRequests, "list"); return err },
		"health":        func() error { _, _, err := runCmd(t, newHealth); return err },
		"approvals --api": func() error {
			t.Setenv("REACH_API", "")
			_, _, err := runCmd(t, newApprovals, "list", "--api", dead)
			return err
		},
	} {
		err := run()
		if err == nil || !strings.Contains(err.Error(), "the gateway at "+dead+" did not answer") ||
			!strings.Contains(err.Error(), "pass --api http://HOST:PORT or set REACH_API") || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("%s at an address nothing serves: %v", name, err)
		}
		t.Setenv("REACH_API", dead)
	}
}
