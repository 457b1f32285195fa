package main

import (
	"strings"
	"testing"
)

// --api (and $REACH_API) as a new user writes it: HOST:PORT as curl takes
// it, or the URL of an endpoint the banner shows (/v1/, /mcp). The first
// said "the gateway at 127.0.0.1:7400 did not answer (is `reach serve`
// running?...): parse ...: first path segment in URL cannot contain
// colon" while it ran; the others asked GET /v1/v1/requests and got a 404
// listing every route. Each now reaches the gateway at that address.
func TestAPIAddressAsWritten(t *testing.T) {
	base, stop, _ := startServe(t, "--data", t.TempDir(), "--listen", "127.0.0.1:0")
	defer stop()
	hostPort := strings.TrimPrefix(base, "http://")
	for _, api := range []string{hostPort, base + "/", base + "/v1", base + "/v1/", base + "/mcp", base + "/ui/"} {
		out, err := runCLI(t, "requests", "list", "--api", api)
		if err != nil || !strings.Contains(out, "no requests") && !strings.Contains(out, "ID") {
			t.Errorf("requests list --api %s: %v\n%s\nwant the gateway's requests", api, err, out)
		}
		t.Setenv("REACH_API", api)
		if out, err := runCLI(t, "health"); err != nil || !strings.Contains(out, "ok") {
			t.Errorf("health with REACH_API=%s: %v\n%s\nwant ok", api, err, out)
		}
	}
	// An address that is no URL says so, not that the gateway did not answer.
	_, err := runCLI(t, "health", "--api", "http://[::1")
	if err == nil || strings.Contains(err.Error(), "did not answer") || !strings.Contains(err.Error(), "http://HOST:PORT") {
		t.Errorf("health --api http://[::1: %v; want it to say the address is not one, and the form it takes", err)
	}
}
