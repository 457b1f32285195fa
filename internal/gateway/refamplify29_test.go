package gateway

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/batch"
)

// TestBatchRefAmplificationRefused: an envelope of /v1/calls whose call
// names one result by $ref thousands of times would have that call's
// arguments thousands of times the result's size (a 32 KiB result, the
// most a tool's result keeps by default, named 100,000 times in a 2 MB
// envelope: 3 GB), built, encoded and checked in the gateway's memory by
// any caller who may call one read tool. Its $refs are refused before they
// are built, past the size an envelope may have, and the call does not run;
// the call whose result was named ran, as it should.
func TestBatchRefAmplificationRefused(t *testing.T) {
	srv := serveTest(t, newTestGateway(t, nil))
	status, out := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"kb","tool":"search_kb","arguments":{"query":"refund policy"}}]}`, nil)
	if status != 200 || path(out, "results", 0, "status") != "success" {
		t.Fatalf("search_kb: %d %v", status, out)
	}
	one := len(fmt.Sprint(path(out, "results", 0, "data")))
	n := 2*batch.MaxEnvelopeBytes/one + 1 // named so often, the arguments would pass the bound twice over
	refs := strings.TrimSuffix(strings.Repeat(`{"$ref":"kb"},`, n), ",")
	env := `{"tool_calls":[{"call_id":"kb","tool":"search_kb","arguments":{"query":"refund policy"}},` +
		`{"call_id":"big","tool":"search_kb","arguments":{"query":[` + refs + `]}}]}`
	if len(env) > batch.MaxEnvelopeBytes {
		t.Fatalf("the envelope is %d bytes, past the bound itself", len(env))
	}
	status, out = do(t, "POST", srv.URL+"/v1/calls", env, nil)
	if status != 200 {
		t.Fatalf("the envelope: %d %v", status, out)
	}
	if s := path(out, "results", 0, "status"); s != "success" {
		t.Errorf("the call named by $ref: %v, want it run", s)
	}
	big := path(out, "results", 1)
	if path(big, "status") != "refused" || path(big, "error", "code") != "ref_too_large" ||
		!strings.Contains(fmt.Sprint(path(big, "error", "message")), fmt.Sprint(batch.MaxArgumentBytes)) {
		t.Errorf("the call naming it %d times: %v, want it refused (ref_too_large) with the bound", n, big)
	}
}
