package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// getAnswer GETs url and returns the answer's status and JSON body.
func getAnswer(t testing.TB, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("GET %s: %d %q", url, resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

// TestInstances27ShowAcross: a request that runs on instance b only,
// asked of instance a (GET /v1/requests/{id}, `reach requests show` with
// a's --api), is answered with where it runs and what to do (the other
// instance's view, a stop through a, the shared audit log), not "There is
// no request here" as if its id were wrong; once ended, a shows it from
// the store. A request the store does not know is still unknown_request.
func TestInstances27ShowAcross(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleet(t)
	if r := callHTTP(t, f.base(1), "r-far", "b1", "up__book", `{"key":"sa"}`, ""); r["status"] != "success" {
		t.Fatalf("book on b: %v", r)
	}
	code, out := getAnswer(t, f.base(0)+"/v1/requests/r-far")
	msg, sugg := errText(out, "message"), errText(out, "suggestion")
	if code != http.StatusNotFound || errCode(out) != "request_elsewhere" || !strings.Contains(msg, "runs on instance b, not on this instance") {
		t.Fatalf("GET r-far on a: %d %v; want 404 request_elsewhere saying it runs on instance b", code, out)
	}
	if on, _ := out["running_on"].([]any); len(on) != 1 || on[0] != "b" || out["state"] != "running" {
		t.Errorf("GET r-far on a: running_on %v, state %v; want [b], running", out["running_on"], out["state"])
	}
	for _, w := range []string{"reach requests cancel r-far", "reach audit show r-far --store"} {
		if !strings.Contains(sugg, w) {
			t.Errorf("the suggestion %q does not say %q", sugg, w)
		}
	}
	// The CLI through a prints it.
	cmd := exec.Command(exe(t), "requests", "show", "r-far", "--api", f.base(0))
	cmd.Env = append(os.Environ(), "REACH_AS_CLI=1")
	got, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(got), "runs on instance b") || !strings.Contains(string(got), "reach requests cancel r-far") {
		t.Errorf("reach requests show r-far --api a: %v, %s; want an error saying it runs on instance b and how to stop it", err, got)
	}
	// The graph route answers the same.
	if code, out := getAnswer(t, f.base(0)+"/v1/requests/r-far/graph?format=json"); code != http.StatusNotFound || errCode(out) != "request_elsewhere" {
		t.Errorf("the graph of r-far on a: %d %v; want 404 request_elsewhere", code, out)
	}
	// Ended through a: a shows it, rebuilt from the store.
	if c := f.end(0, "r-far"); c != http.StatusOK {
		t.Fatalf("end r-far through a: %d", c)
	}
	if state, ended := f.awaitEnded("r-far", 10*time.Second, nil); !ended {
		t.Fatalf("r-far is stored %s, not ended", state)
	}
	if code, out = getAnswer(t, f.base(0)+"/v1/requests/r-far"); code != http.StatusOK || out["state"] != "completed" {
		t.Errorf("GET r-far on a once ended: %d %v; want 200, completed", code, out)
	}
	if code, out := getAnswer(t, f.base(0)+"/v1/requests/r-none"); code != http.StatusNotFound || errCode(out) != "unknown_request" {
		t.Errorf("GET r-none on a: %d %v; want 404 unknown_request", code, out)
	}
}

// errText is the field of an API answer's error, "" if it has none.
func errText(out map[string]any, field string) string {
	e, _ := out["error"].(map[string]any)
	s, _ := e[field].(string)
	return s
}
