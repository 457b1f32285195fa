package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestInstancesStopShownAcross: a request runs on both instances; b's part
// of it ends (its idle gap) while a's runs on; then it is stopped through
// a's API. b's API, its UI and `reach requests` show it stopped, by whom
// and when, as a does: b kept its part as completed, and the stop, stored
// and heard by b, was applied only to requests still running there.
func TestInstancesStopShownAcross(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleet(t)
	f.restartWith(t, 1, "idle_gap: 1s\n") // b's part of a request ends a second after its last call
	if r := callHTTP(t, f.base(1), "r-both", "b1", "up__count", `{"key":"both-b"}`, ""); r["status"] != "success" {
		t.Fatalf("the call on b: %v", r)
	}
	// a's part runs on (a call every 200 ms, its idle gap 5 min) until b's
	// part ends.
	ended := false
	for i := 0; i < 100 && !ended; i++ {
		if r := callHTTP(t, f.base(0), "r-both", fmt.Sprint("a", i), "up__count", fmt.Sprintf(`{"key":"both-a%d"}`, i), ""); r["status"] != "success" {
			t.Fatalf("call %d on a: %v", i, r)
		}
		ended = getJSONTB(t, f.base(1)+"/v1/requests/r-both")["running_on"] != nil // b's part ended, a's runs
		time.Sleep(200 * time.Millisecond)
	}
	if !ended {
		t.Fatal("b's part of the request did not end within its idle gap")
	}
	out := postTo(t, f.base(0)+"/v1/requests/r-both/cancel", `{"mode":"cancel","reason":"runaway across instances"}`)
	stop, _ := out["stop"].(map[string]any)
	if out["state"] != "stopped_cancel" || stop == nil {
		t.Fatalf("the stop through a: %v", out)
	}
	var got map[string]any
	// The stop reaches b as a wake-up (or its catch-up), a minute at most
	// (it waited 100 looks, some 5 s, which a loaded race build can spend
	// before b hears the stop).
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		// running on a, as the store said, until the stop; completed, b's
		// part, between the stop's write and b's hearing of it
		if got = getJSONTB(t, f.base(1)+"/v1/requests/r-both"); got["state"] != "running" && got["state"] != "completed" {
			break
		}
	}
	gotStop, _ := got["stop"].(map[string]any)
	if got["state"] != "stopped_cancel" || got["activity"] != "stopped" || gotStop == nil ||
		gotStop["by"] != stop["by"] || gotStop["at"] != stop["at"] || gotStop["reason"] != "runaway across instances" {
		t.Fatalf("b's API shows the request %v (activity %v), stop %v; want stopped_cancel, stop %v", got["state"], got["activity"], gotStop, stop)
	}
	list := getJSONTB(t, f.base(1)+"/v1/requests")
	rs, _ := list["requests"].([]any)
	if len(rs) != 1 || rs[0].(map[string]any)["state"] != "stopped_cancel" {
		t.Fatalf("b's list: %v; want r-both stopped_cancel", list)
	}
	table, err := runCLI(t, "requests", "list", "--api", f.base(1))
	if err != nil || !strings.Contains(table, "r-both") || !strings.Contains(table, "stopped (cancel)") {
		t.Fatalf("reach requests list on b: %v\n%s", err, table)
	}
	shown, err := runCLI(t, "requests", "show", "r-both", "--api", f.base(1))
	if err != nil || !strings.Contains(shown, `"stopped_cancel"`) || !strings.Contains(shown, fmt.Sprint(stop["at"])) {
		t.Fatalf("reach requests show on b: %v\n%s", err, shown)
	}
	resp, err := http.Get(f.base(1) + "/ui/requests/r-both")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "stopped (cancel) by api") || !strings.Contains(string(page), `datetime="`+fmt.Sprint(stop["at"])) {
		t.Fatalf("b's UI page of the request does not show it stopped by api, when:\n%s", page)
	}
}

// restartWith stops instance i, adds yaml to its configuration and starts
// it again.
func (f *fleet) restartWith(t *testing.T, i int, yaml string) {
	t.Helper()
	f.stop(i)
	cfg, err := os.ReadFile(f.cfg[i])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.cfg[i], append(cfg, yaml...), 0o644); err != nil {
		t.Fatal(err)
	}
	f.start(i)
}
