package main

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rerun26CallIDs returns the call ids of the tool frames in a view's
// "frames" (GET /v1/requests/{id}, its graph's JSON), sorted.
func rerun26CallIDs(t testing.TB, view map[string]any) []string {
	t.Helper()
	fs, _ := view["frames"].([]any)
	var ids []string
	for _, f := range fs {
		m, _ := f.(map[string]any)
		if m["kind"] == "tool" {
			id, _ := m["call_id"].(string)
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// rerun26Check asserts that request id shows exactly the calls want, through
// the API (the request and its graph) and `reach requests show`.
func rerun26Check(t *testing.T, base, id string, want []string) {
	t.Helper()
	if got := rerun26CallIDs(t, getJSONTB(t, base+"/v1/requests/"+id)); !slices.Equal(got, want) {
		t.Errorf("GET /v1/requests/%s shows the calls %v, want %v", id, got, want)
	}
	if got := rerun26CallIDs(t, getJSONTB(t, base+"/v1/requests/"+id+"/graph?format=json")); !slices.Equal(got, want) {
		t.Errorf("the graph of %s shows the calls %v, want %v", id, got, want)
	}
	shown, err := runCLI(t, "requests", "show", id, "--api", base)
	if err != nil {
		t.Fatalf("reach requests show %s: %v", id, err)
	}
	page := getPage(t, base+"/ui/requests/"+id)
	for _, c := range want {
		if !strings.Contains(shown, fmt.Sprintf("%q", c)) {
			t.Errorf("reach requests show %s lacks the call %s:\n%s", id, c, shown)
		}
		if !strings.Contains(page, id+"-"+c) { // its arguments' key
			t.Errorf("the UI's page of %s lacks the call %s", id, c)
		}
	}
}

// TestRerun26NamedAgainAfterRestartKeepsHistory: calls in a request a client
// names, a graceful restart of `reach serve` (which stores the request
// ended), the same request id named again: the request runs on under its
// id, and its views (GET /v1/requests/{id}, its graph, `reach requests
// show`) show every call, those before the restart too (before, only the
// calls made since it were shown; the audit log alone kept the others).
// After a second restart the stored request shows them all. A request
// stopped before the restart stays stopped: named again, it is refused.
func TestRerun26NamedAgainAfterRestartKeepsHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts reach serve: skipped in -short mode")
	}
	_, upURL := sharedUpstream(t)
	addr, data := freeAddr(t), t.TempDir()
	base := "http://" + addr
	cfg := writeConfig(t, fmt.Sprintf("upstreams:\n  - {name: up, url: '%s'}\n", upURL))
	call := func(request, callID string) map[string]any {
		t.Helper()
		return callHTTP(t, base, request, callID, "up__count", fmt.Sprintf(`{"key":%q}`, request+"-"+callID), "")
	}
	ok := func(request, callID string) {
		t.Helper()
		if r := call(request, callID); r["status"] != "success" {
			t.Fatalf("%s in %s: %v", callID, request, r)
		}
	}

	cmd := startReach(t, cfg, addr, data)
	ok("r-again", "c1")
	ok("r-again", "c2")
	ok("r-stop", "s1")
	if out := postTo(t, base+"/v1/requests/r-stop/cancel", `{"reason":"rerun26 stop"}`); !strings.HasPrefix(fmt.Sprint(out["state"]), "stopped") {
		t.Fatalf("cancel r-stop: %v", out)
	}
	stopServe(t, cmd, syscall.SIGTERM)

	cmd = startReach(t, cfg, addr, data)
	// No view reads r-again before it is named again: the request of the
	// earlier run is read back from the store with c3 stored too.
	ok("r-again", "c3")
	if got := getJSONTB(t, base+"/v1/requests/r-again"); got["state"] != "running" {
		t.Errorf("r-again named again: %v; want running", got["state"])
	}
	rerun26Check(t, base, "r-again", []string{"c1", "c2", "c3"})
	if r := call("r-stop", "s2"); r["status"] == "success" || !strings.HasPrefix(errCode(r), "stopped_") {
		t.Errorf("r-stop named again after the restart: %v; want refused as stopped", r)
	}
	rerun26Check(t, base, "r-stop", []string{"s1", "s2"}) // s2 refused, nothing ran
	stopServe(t, cmd, syscall.SIGTERM)

	cmd = startReach(t, cfg, addr, data)
	rerun26Check(t, base, "r-again", []string{"c1", "c2", "c3"})
	ok("r-again", "c4")
	rerun26Check(t, base, "r-again", []string{"c1", "c2", "c3", "c4"})
	stopServe(t, cmd, syscall.SIGTERM)
}

// TestRerun26NamedAgainAfterRestartKeepsHistoryOnPostgres: on two
// instances over one PostgreSQL, calls through a, both restarted
// gracefully (the request is stored ended), the same request id named
// again through b: b's views show the calls a made before the restart and
// its own.
func TestRerun26NamedAgainAfterRestartKeepsHistoryOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleet(t)
	for _, c := range []string{"c1", "c2"} {
		if r := callHTTP(t, f.base(0), "r-again", c, "up__count", fmt.Sprintf(`{"key":"r-again-%s"}`, c), ""); r["status"] != "success" {
			t.Fatalf("%s through a: %v", c, r)
		}
	}
	f.stop(0)
	f.stop(1)
	if state, ended := f.awaitEnded("r-again", 30*time.Second, nil); !ended || state != "ended" {
		t.Fatalf("r-again after the graceful stops: %s, ended %v; want ended", state, ended)
	}
	f.start(0)
	f.start(1)
	if r := callHTTP(t, f.base(1), "r-again", "c3", "up__count", `{"key":"r-again-c3"}`, ""); r["status"] != "success" {
		t.Fatalf("c3 through b: %v", r)
	}
	rerun26Check(t, f.base(1), "r-again", []string{"c1", "c2", "c3"})
}
