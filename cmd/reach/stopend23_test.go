package main

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// uiStop posts the UI's Stop form (mode cancel) of request id through
// base, with the page's form token, and returns where it sends the
// browser.
func uiStop(t *testing.T, base, id string) string {
	t.Helper()
	_, page := get(t, base+"/ui/requests/"+id)
	tok := regexp.MustCompile(`name="reach-csrf" content="([^"]+)"`).FindStringSubmatch(page)
	if tok == nil {
		t.Fatal("the request page has no form token")
	}
	form := strings.NewReader(url.Values{"mode": {"cancel"}, "reason": {"from the page"}, "csrf": {tok[1]}}.Encode())
	req, _ := http.NewRequest("POST", base+"/ui/stop/"+url.PathEscape(id), form)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the UI's stop of %s through %s: %s", id, base, resp.Status)
	}
	return resp.Header.Get("Location")
}

// awaitCompleted waits until base's view of request id says completed.
func awaitCompleted(t *testing.T, base, id string) {
	t.Helper()
	for range 600 {
		if getJSONTB(t, base+"/v1/requests/"+id)["state"] == "completed" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not end within a minute: %v", id, getJSONTB(t, base+"/v1/requests/"+id))
}

// stopRefused stops request id through base and wants it refused 409
// request_ended, with the request's final state, completed.
func stopRefused(t *testing.T, base, id string) {
	t.Helper()
	code, out := postJSON(t, base+"/v1/requests/"+id+"/cancel", `{"reason":"too late"}`)
	if code != http.StatusConflict || errCode(out) != "request_ended" || out["state"] != "completed" {
		t.Errorf("a stop of %s, which had ended, through %s answered %d %v; want 409 request_ended, state completed", id, base, code, out)
	}
	if s := getJSONTB(t, base+"/v1/requests/"+id)["state"]; s != "completed" {
		t.Errorf("%s is shown %v through %s after the refused stop; want completed", id, s, base)
	}
}

// TestStopEnd23EndedOnSQLite: a request that booked something (its undo
// declared) and ended, by its idle gap or by its client (POST .../end), is
// stopped through the API of one reach serve on SQLite. The stop is
// refused 409 request_ended, the request stays completed, and its booking
// is not undone. Before, the stop of the request still held in memory ran
// its undo ("unbook" ran once) and showed it stopped.
func TestStopEnd23EndedOnSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("a process: skipped in -short mode")
	}
	up, upURL := sharedUpstream(t)
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`upstreams:
  - {name: up, url: '%s'}
tools:
  up__book: {undo: {tool: up__unbook, args: '{"key": "{args.key}"}'}}
budgets:
  default: {tool_calls: 100000, wall: 1h}
idle_gap: 1s
`, upURL))
	startReach(t, cfg, addr, t.TempDir())
	base := "http://" + addr
	for _, how := range []string{"idle", "client"} {
		t.Run(how, func(t *testing.T) {
			id, key := "r-"+how, "s-"+how
			if r := callHTTP(t, base, id, "c1", "up__book", fmt.Sprintf(`{"key":%q}`, key), ""); r["status"] != "success" {
				t.Fatalf("the booking: %v", r)
			}
			if how == "client" {
				if code, out := postJSON(t, base+"/v1/requests/"+id+"/end", ""); code != http.StatusOK {
					t.Fatalf("the client's end: %d %v", code, out)
				}
			}
			awaitCompleted(t, base, id)
			stopRefused(t, base, id)
			// A stop that went through starts its undos as soon as it is
			// stored: give one time to show.
			time.Sleep(2 * time.Second)
			if n := up.count("unbook " + key); n != 0 {
				t.Errorf("the booking of %s, which had ended, was undone %d times after a stop; want 0", id, n)
			}
			if n := up.count("book " + key); n != 1 {
				t.Errorf("book %s ran %d times; want 1", key, n)
			}
		})
	}
}

// TestStopEnd23EndedOnPostgres: a request books on both instances of one
// PostgreSQL; b's part of it ends (its idle gap) while a's runs on, then
// a's ends too (stored ended), or its client ends it through a. A stop
// through either instance is refused 409 request_ended (b still holds its
// part, over, for its views), nothing is stored, and neither booking is
// undone, by the stop or by a recovery after it. Before, the stop through
// b was applied to its ended part: its undo ran, and the request was
// stored stopped. (A stop through b while a's part runs on goes through:
// TestLeave23StopRunsHandedUndos.)
func TestStopEnd23EndedOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleetWith(t, "")
	f.restartWith(t, 0, "idle_gap: 3s\n")
	f.restartWith(t, 1, "idle_gap: 1s\n")
	for _, how := range []string{"idle", "client"} {
		t.Run(how, func(t *testing.T) {
			id := "r-end-" + how
			before := map[string]int{}
			for _, w := range []string{"unbook sa", "unbook sb"} {
				before[w] = f.up.count(w)
			}
			leftPart(t, f, id)
			if how == "client" {
				if code := f.end(0, id); code != http.StatusOK {
					t.Fatalf("the client's end through a: %d", code)
				}
			}
			if state, ended := f.awaitEnded(id, 2*time.Minute, nil); !ended || state != "ended" {
				t.Fatalf("%s is stored %s (ended %v); want it ended", id, state, ended)
			}
			awaitCompleted(t, f.base(0), id)
			for i := range 2 {
				stopRefused(t, f.base(i), id)
			}
			if loc := uiStop(t, f.base(1), id); !strings.HasSuffix(loc, "?flash=not_stopped") {
				t.Errorf("the UI's stop through b of %s, which had ended, sent to %q; want ?flash=not_stopped", id, loc)
			}
			// Each instance's next recoveries (a TTL/2 apart at least)
			// would claim a request stored stopped with undos to run.
			time.Sleep(3 * time.Second)
			for _, w := range []string{"unbook sa", "unbook sb"} {
				if n := f.up.count(w) - before[w]; n != 0 {
					t.Errorf("%s ran %d times for %s, which had ended, after a stop; want 0", w, n, id)
				}
			}
			if st := storedRequest(t, f.url, id); st.State != "ended" {
				t.Errorf("%s is stored %s after the stops; want it ended", id, st.State)
			}
		})
	}
}

// TestStopEnd23UIThroughEndedPart: b's part of a request ends (its idle
// gap) while a's runs on; b's UI shows it running, on a, and its Stop
// form stores the stop: a's part is stopped, with the page's cause, and
// b's booking, handed over as b's part left, is undone once by the
// recovery. (Request.Stop no longer stops a part that ended: without the
// UI's stop through the store, the form changed nothing.)
func TestStopEnd23UIThroughEndedPart(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleetWith(t, "")
	f.restartWith(t, 0, "idle_gap: 3s\n")
	f.restartWith(t, 1, "idle_gap: 1s\n")
	const id = "r-ui"
	leftPart(t, f, id)
	if loc := uiStop(t, f.base(1), id); !strings.HasSuffix(loc, "?flash=stopped") {
		t.Fatalf("the UI's stop through b sent to %q; want ?flash=stopped", loc)
	}
	if state, ended := f.awaitEnded(id, 2*time.Minute, nil); !ended || state != "stopped" {
		t.Fatalf("%s is stored %s (ended %v) after the stop; want it stopped and ended", id, state, ended)
	}
	if st := storedRequest(t, f.url, id); !strings.Contains(string(st.Cause), "from the page") {
		t.Errorf("%s is stored with the cause %s; want the page's", id, st.Cause)
	}
	for deadline := time.Now().Add(time.Minute); f.up.count("unbook sb") == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	for what, want := range map[string]int{"unbook sa": 1, "unbook sb": 1} {
		if n := f.up.count(what); n != want {
			t.Errorf("%s ran %d times; want %d", what, n, want)
		}
	}
}
