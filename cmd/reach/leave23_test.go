package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// leftPart books sb in request id through b and sa through a; b's part
// ends (its idle gap, 1s) while a's runs on (a count every 200 ms, its
// idle gap 3s), and leftPart returns once b's view shows the request
// running on a only.
func leftPart(t *testing.T, f *fleet, id string) {
	t.Helper()
	if r := callHTTP(t, f.base(0), id, "a0", "up__book", `{"key":"sa"}`, ""); r["status"] != "success" {
		t.Fatalf("the booking on a: %v", r)
	}
	if r := callHTTP(t, f.base(1), id, "b0", "up__book", `{"key":"sb"}`, ""); r["status"] != "success" {
		t.Fatalf("the booking on b: %v", r)
	}
	for i := range 150 {
		if r := callHTTP(t, f.base(0), id, fmt.Sprint("a", i+1), "up__count", fmt.Sprintf(`{"key":"%s-a%d"}`, id, i), ""); r["status"] != "success" {
			t.Fatalf("call %d on a: %v", i, r)
		}
		if getJSONTB(t, f.base(1)+"/v1/requests/"+id)["running_on"] != nil {
			return // b's part ended, a's runs
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("b's part of the request did not end within its idle gap")
}

// TestLeave23StopRunsHandedUndos: a request books on both instances of one
// PostgreSQL; b's part of it ends (its idle gap) while a's runs on, then
// the request is stopped, through a (which runs it) or through b (whose
// part is over). b's booking is undone once, as a's is: b's part handed
// its undo over to the request's record as it left, and the recovery that
// takes the stopped request over once a's part left too runs it. Before,
// a stop through a was applied only to the part still running there:
// "unbook sb" ran 0 times, the request stored stopped and b's booking kept.
// (Through b, whose part is over but kept for its views, the stop is
// stored as through a: b's part runs no undo of its own, the recovery
// runs the one it handed over, once.) A request that ends with no stop lets the
// handed undo go: stored ended, no recovery claims it.
func TestLeave23StopRunsHandedUndos(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleetWith(t, "")
	f.restartWith(t, 0, "idle_gap: 3s\n")
	f.restartWith(t, 1, "idle_gap: 1s\n")
	for i, through := range []int{0, 1} {
		id := fmt.Sprint("r-left", i)
		t.Run(fmt.Sprint("stopped through ", f.names[through]), func(t *testing.T) {
			before := map[string]int{}
			for _, w := range []string{"unbook sa", "unbook sb", "book sa", "book sb"} {
				before[w] = f.up.count(w)
			}
			leftPart(t, f, id)
			if n := f.up.count("unbook sb") - before["unbook sb"]; n != 0 {
				t.Fatalf("b's booking was undone %d times when its part left; want 0 (the request runs on)", n)
			}
			out := postTo(t, f.base(through)+"/v1/requests/"+id+"/cancel", `{"reason":"runaway"}`)
			if s, _ := out["state"].(string); !strings.HasPrefix(s, "stopped") {
				t.Fatalf("the stop through %s answered %v; want the request stopped", f.names[through], out)
			}
			// a's part leaves once idle; a recovery ends the request.
			if state, ended := f.awaitEnded(id, 2*time.Minute, nil); !ended || state != "stopped" {
				t.Fatalf("%s is stored %s (ended %v) after the stop; want it stopped and ended", id, state, ended)
			}
			for deadline := time.Now().Add(time.Minute); f.up.count("unbook sb") == before["unbook sb"] && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
			}
			for what, want := range map[string]int{"book sa": 1, "book sb": 1, "unbook sa": 1, "unbook sb": 1} {
				if n := f.up.count(what) - before[what]; n != want {
					t.Errorf("%s ran %d times for %s; want %d", what, n, id, want)
				}
			}
			for i := range 2 {
				if r := callHTTP(t, f.base(i), id, "late", "up__book", `{"key":"late"}`, ""); r["status"] == "success" {
					t.Errorf("a booking in the stopped request through %s: %v; want it refused", f.names[i], r)
				}
			}
		})
	}
	t.Run("ended", func(t *testing.T) {
		before := f.up.count("unbook sb")
		const id = "r-left-ended"
		leftPart(t, f, id)
		// a's part ends too (its idle gap), with no stop: the request is
		// stored ended, its handed undo let go.
		if state, ended := f.awaitEnded(id, 2*time.Minute, nil); !ended || state != "ended" {
			t.Fatalf("%s is stored %s (ended %v); want it ended", id, state, ended)
		}
		// Each instance's next recoveries (a TTL/2 apart at least) claim
		// nothing of it: no orphan, nothing undone.
		time.Sleep(3 * time.Second)
		if n := f.up.count("unbook sb") - before; n != 0 {
			t.Errorf("unbook sb ran %d times for a request that ended with no stop; want 0", n)
		}
		if st := storedRequest(t, f.url, id); st.State != "ended" {
			t.Errorf("%s is stored %s after the recoveries; want it ended", id, st.State)
		}
	})
}

// TestLeave23KilledAtHandedOnPostgres kills (kill -9) at the new durable
// points of a part that leaves with undos (docs/STATE.md, "Crash
// points"):
//
//   - request.handed: b's part left the request, its undo handed over
//     to the request's record, and b is killed. The request is stopped
//     through a: b's booking is undone once (by the recovery that takes
//     the request over once a's part left), a's once; b, started again,
//     undoes nothing more. Before, nothing was handed over and b's
//     booking stayed.
//   - request.left: a's part of the stopped request left it, the last
//     live one, and did not end it (an orphan holding b's handed undo);
//     a is killed there.
//     b's recovery of a's dead life claims it and ends it stopped, b's
//     booking undone once and a's not again.
func TestLeave23KilledAtHandedOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleetWith(t, "")
	f.restartWith(t, 0, "idle_gap: 3s\n")
	f.restartWith(t, 1, "idle_gap: 1s\n")
	before := func() map[string]int {
		m := map[string]int{}
		for _, w := range []string{"book sa", "book sb", "unbook sa", "unbook sb"} {
			m[w] = f.up.count(w)
		}
		return m
	}
	check := func(t *testing.T, id string, was map[string]int, when string) {
		t.Helper()
		for what, want := range map[string]int{"book sa": 1, "book sb": 1, "unbook sa": 1, "unbook sb": 1} {
			if n := f.up.count(what) - was[what]; n != want {
				t.Errorf("%s ran %d times for %s %s; want %d", what, n, id, when, want)
			}
		}
	}
	t.Run("request.handed", func(t *testing.T) {
		const id = "r-handed"
		was := before()
		f.stop(1)
		cmd, reached := startReachAt(t, f.cfg[1], f.addr[1], f.data[1], "request.handed")
		f.cmd[1] = cmd
		if r := callHTTP(t, f.base(0), id, "a0", "up__book", `{"key":"sa"}`, ""); r["status"] != "success" {
			t.Fatalf("the booking on a: %v", r)
		}
		if r := callHTTP(t, f.base(1), id, "b0", "up__book", `{"key":"sb"}`, ""); r["status"] != "success" {
			t.Fatalf("the booking on b: %v", r)
		}
		// a's part runs on (a call every 200 ms) until b's part left,
		// its undo handed over: b stops there.
		for i := 0; ; i++ {
			select {
			case <-reached:
			case <-time.After(200 * time.Millisecond):
				if i > 300 {
					t.Fatal("b never reached request.handed")
				}
				if r := callHTTP(t, f.base(0), id, fmt.Sprint("a", i+1), "up__count", fmt.Sprintf(`{"key":"h-a%d"}`, i), ""); r["status"] != "success" {
					t.Fatalf("call %d on a: %v", i, r)
				}
				continue
			}
			break
		}
		dead := f.lifeOf(t, "b")
		f.kill(1)
		out := postTo(t, f.base(0)+"/v1/requests/"+id+"/cancel", `{"reason":"runaway"}`)
		if s, _ := out["state"].(string); !strings.HasPrefix(s, "stopped") {
			t.Fatalf("the stop through a answered %v; want the request stopped", out)
		}
		if state, ended := f.awaitEnded(id, 2*time.Minute, nil); !ended || state != "stopped" {
			t.Fatalf("%s is stored %s (ended %v) after the stop; want it stopped and ended", id, state, ended)
		}
		check(t, id, was, "once the stop was settled")
		f.awaitForgotten(t, dead)
		f.start(1)
		f.awaitLive(t, "b")
		if r := callHTTP(t, f.base(1), id, "late", "up__book", `{"key":"late"}`, ""); r["status"] == "success" {
			t.Errorf("a booking in the stopped request through b's new life: %v; want it refused", r)
		}
		check(t, id, was, "after b came back")
	})
	t.Run("request.left", func(t *testing.T) {
		const id = "r-orphaned"
		was := before()
		f.stop(0)
		cmd, reached := startReachAt(t, f.cfg[0], f.addr[0], f.data[0], "request.left")
		f.cmd[0] = cmd
		dead := f.lifeOf(t, "a")
		leftPart(t, f, id)
		out := postTo(t, f.base(0)+"/v1/requests/"+id+"/cancel", `{"reason":"runaway"}`)
		if s, _ := out["state"].(string); !strings.HasPrefix(s, "stopped") {
			t.Fatalf("the stop through a answered %v; want the request stopped", out)
		}
		select { // a's part leaves once idle (3s): the request left, not ended
		case <-reached:
		case <-time.After(time.Minute):
			t.Fatal("a never reached request.left")
		}
		f.kill(0)
		if st := storedRequest(t, f.url, id); st.State != "stopped" || !st.Ended.IsZero() {
			t.Fatalf("%s is stored %s (ended %v) at a's kill; want it stopped, not ended", id, st.State, st.Ended)
		}
		if state, ended := f.awaitEnded(id, 2*time.Minute, nil); !ended || state != "stopped" {
			t.Fatalf("%s is stored %s (ended %v) after b's recovery; want it stopped and ended", id, state, ended)
		}
		f.awaitForgotten(t, dead)
		check(t, id, was, "once b recovered a's dead life")
		f.start(0)
		f.awaitLive(t, "a")
		check(t, id, was, "after a came back")
	})
}
