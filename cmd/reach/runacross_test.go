package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestInstancesRunningShownAcross: a request runs on both instances; b's
// part of it ends (its idle gap) while a's runs on. b's API, its list,
// `reach requests` and its UI show it running, on a, as the store says,
// not completed; once a's part ends too (its client ends it), b shows it
// completed.
func TestInstancesRunningShownAcross(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleet(t)
	f.restartWith(t, 1, "idle_gap: 1s\n") // b's part of a request ends a second after its last call
	if r := callHTTP(t, f.base(1), "r-run", "b1", "up__count", `{"key":"run-b"}`, ""); r["status"] != "success" {
		t.Fatalf("the call on b: %v", r)
	}
	// a's part runs on (a call every 200 ms, its idle gap 5 min) until b
	// shows the request running elsewhere: b's part ended.
	var got map[string]any
	for i := 0; i < 100; i++ {
		if r := callHTTP(t, f.base(0), "r-run", fmt.Sprint("a", i), "up__count", fmt.Sprintf(`{"key":"run-a%d"}`, i), ""); r["status"] != "success" {
			t.Fatalf("call %d on a: %v", i, r)
		}
		got = getJSONTB(t, f.base(1)+"/v1/requests/r-run")
		if got["state"] == "completed" || got["running_on"] != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if on := fmt.Sprint(got["running_on"]); got["state"] != "running" || got["activity"] != "running" || on != "[a]" {
		t.Fatalf("b's API shows the request %v (activity %v, running on %v); want running on [a], as the store says", got["state"], got["activity"], on)
	}
	list := getJSONTB(t, f.base(1)+"/v1/requests?state=running")
	rs, _ := list["requests"].([]any)
	if len(rs) != 1 || rs[0].(map[string]any)["state"] != "running" || fmt.Sprint(rs[0].(map[string]any)["running_on"]) != "[a]" {
		t.Fatalf("b's list of running requests: %v; want r-run running on a", list)
	}
	table, err := runCLI(t, "requests", "list", "--api", f.base(1))
	if err != nil || !strings.Contains(table, "r-run") || !strings.Contains(table, "running on a") {
		t.Fatalf("reach requests list on b: %v\n%s", err, table)
	}
	shown, err := runCLI(t, "requests", "show", "r-run", "--api", f.base(1))
	if err != nil || !strings.Contains(shown, `"running"`) || !strings.Contains(shown, `"running_on"`) {
		t.Fatalf("reach requests show on b: %v\n%s", err, shown)
	}
	page := getPage(t, f.base(1)+"/ui/requests/r-run")
	if !strings.Contains(page, ">running on a</span>") {
		t.Fatalf("b's UI page of the request does not show it running on a:\n%s", page)
	}
	if page := getPage(t, f.base(1)+"/ui/"); !strings.Contains(page, "on a</span>") {
		t.Fatalf("b's UI list does not show the request running on a:\n%s", page)
	}
	// a's part ends (its client ends the request): the store holds it
	// ended, and b shows its part completed again.
	if out := postTo(t, f.base(0)+"/v1/requests/r-run/end", `{}`); out["state"] == nil {
		t.Fatalf("the end through a: %v", out)
	}
	// A minute at most (it waited 100 looks, some 5 s, which a loaded
	// race build can spend before b reads the end).
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = getJSONTB(t, f.base(1)+"/v1/requests/r-run"); got["state"] == "completed" {
			break
		}
	}
	if got["state"] != "completed" || got["running_on"] != nil {
		t.Fatalf("b's API after the end shows %v (running on %v); want completed", got["state"], got["running_on"])
	}
}

// getPage returns the body of a GET of url.
func getPage(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
