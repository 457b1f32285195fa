package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

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
