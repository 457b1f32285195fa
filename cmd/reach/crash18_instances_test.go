package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
)

// TestCrash18StopWhileInstanceDead: two instances on one PostgreSQL; a
// request books on both, instance a is killed (kill -9), and the request
// is stopped through b: while a's heartbeat is still fresh (its death not
// known yet), or once a's death was recovered. Either way (docs/STATE.md,
// "For several instances"): the stop holds, both bookings are undone once
// (a's too, which a can no longer undo), the request stays stopped when a
// comes back under its name, whose call in it is refused, and nothing is
// undone again by a's new life.
func TestCrash18StopWhileInstanceDead(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	for _, tc := range []struct {
		name         string
		known, ended bool
	}{
		{name: "before a's death is known"},
		{name: "after a's death was recovered", known: true},
		{name: "ended by its client after the stop", known: true, ended: true},
	} {
		known := tc.known
		t.Run(strings.ReplaceAll(tc.name, "'", ""), func(t *testing.T) {
			// b's part leaves the request once idle (idle_gap 2s), a's
			// not (5 min): a's part must still run at the kill, or its
			// booking, in a part that ended, is not the stop's to undo.
			// With both at 2s, that was the clock's: slower than 2 s from
			// a's booking to the kill (load), a's part had ended and
			// "unbook sa" ran 0 times.
			f := newFleetWith(t, "")
			f.restartWith(t, 1, "idle_gap: 2s\n")
			if r := callHTTP(t, f.base(0), "r-s", "b1", "up__book", `{"key":"sa"}`, ""); r["status"] != "success" {
				t.Fatalf("book on a: %v", r)
			}
			if r := callHTTP(t, f.base(1), "r-s", "b2", "up__book", `{"key":"sb"}`, ""); r["status"] != "success" {
				t.Fatalf("book on b: %v", r)
			}
			// A call of r-s holds on b until the stop: the request is not
			// idle there (idle_gap) before it is stopped.
			go func() {
				body := `{"request_id":"r-s","tool_calls":[{"call_id":"h1","tool":"up__hold","arguments":{"key":"h1"}}]}`
				if resp, err := http.Post(f.base(1)+"/v1/calls", "application/json", strings.NewReader(body)); err == nil {
					resp.Body.Close()
				}
			}()
			<-f.up.started
			dead := f.lifeOf(t, "a")
			release := func() {}
			if known {
				f.kill(0)
				f.awaitForgotten(t, dead)
			} else {
				// The stop must come while a still looks alive to b. Left to
				// the clock (instance_ttl 2s after a's last heartbeat), a
				// stop slower than that under load ran the other case
				// unseen. So a is frozen (it sends no heartbeat after),
				// held alive on the store (holdAlive), killed, and held
				// again (a heartbeat sent before the freeze may land after
				// the first hold), until the stop through b is answered.
				if err := f.cmd[0].Process.Signal(syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				first := holdAlive(t, f.url, "a")
				f.kill(0)
				again := holdAlive(t, f.url, "a")
				release = func() { first(); again() }
			}
			out := postTo(t, f.base(1)+"/v1/requests/r-s/cancel", `{"reason":"enough"}`)
			release()
			if s, _ := out["state"].(string); !strings.HasPrefix(s, "stopped") {
				t.Fatalf("the stop through b answered %v; want the request stopped", out)
			}
			if tc.ended { // b leaves it at once
				if status := f.end(1, "r-s"); status != 200 {
					t.Fatalf("the client's end of r-s through b: %d", status)
				}
			}
			// b leaves it once idle (idle_gap); a recovery ends it.
			if state, ended := f.awaitEnded("r-s", 2*time.Minute, nil); !ended || !strings.HasPrefix(state, "stopped") {
				t.Errorf("r-s is stored %s (ended %v) after the stop and a's death; want it stopped and ended", state, ended)
			}
			f.awaitForgotten(t, dead)
			for what, want := range map[string]int{"book sa": 1, "book sb": 1, "unbook sa": 1, "unbook sb": 1} {
				if n := f.up.count(what); n != want {
					t.Errorf("%s ran %d times once the stop and a's death were settled; want %d", what, n, want)
				}
			}
			// a comes back under its name: the stop holds there too.
			f.start(0)
			f.awaitLive(t, "a")
			for i := range 2 {
				r := callHTTP(t, f.base(i), "r-s", "b3", "up__book", `{"key":"sc"}`, "")
				if r["status"] == "success" || !strings.HasPrefix(errCode(r), "stopped") {
					t.Errorf("a booking in the stopped request through instance %d got %v; want it refused as stopped", i, r)
				}
			}
			for what, want := range map[string]int{"book sa": 1, "book sb": 1, "book sc": 0, "unbook sa": 1, "unbook sb": 1} {
				if n := f.up.count(what); n != want {
					t.Errorf("%s ran %d times after a came back; want %d", what, n, want)
				}
			}
		})
	}
}

// newFleetWith is newFleet with more configuration for both instances.
func newFleetWith(t testing.TB, more string) *fleet {
	t.Helper()
	f := &fleet{t: t, pg: pgtest.Own(t), names: [2]string{"a", "b"}}
	var err error
	if f.url, err = f.pg.CreateDatabase(context.Background(), "reach"); err != nil {
		t.Fatal(err)
	}
	var upURL string
	f.up, upURL = sharedUpstream(t)
	for i := range 2 {
		f.addr[i], f.data[i] = freeAddr(t), t.TempDir()
		f.cfg[i] = writeConfig(t, fmt.Sprintf(`store: %s
instance: %s
instance_ttl: 2s
upstreams:
  - {name: up, url: '%s'}
tools:
  up__book: {undo: {tool: up__unbook, args: '{"key": "{args.key}"}'}}
budgets:
  default: {tool_calls: 100000, wall: 1h}
`, f.url, f.names[i], upURL)+more)
		f.start(i)
	}
	t.Cleanup(func() {
		for i := range 2 {
			f.stop(i)
		}
	})
	return f
}

// lives reads the lives the store lists, alive within the fleet's TTL.
func (f *fleet) lives(t *testing.T) []postgres.Life {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, f.url, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lives, err := st.Lives(ctx, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return lives
}

// lifeOf is the owner of instance name's live life.
func (f *fleet) lifeOf(t *testing.T, name string) string {
	t.Helper()
	for range 1200 {
		for _, l := range f.lives(t) {
			if l.Name == name && l.Alive {
				return l.Owner
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("instance %s never heartbeated", name)
	return ""
}

// awaitLive waits until instance name heartbeats, and its life's
// recovery of what died before it ran.
func (f *fleet) awaitLive(t *testing.T, name string) {
	t.Helper()
	f.lifeOf(t, name)
}

// awaitForgotten waits until the store no longer lists the life owner,
// killed: a life is forgotten once a recovery settled its work
// (durable.Shared.Forget).
func (f *fleet) awaitForgotten(t *testing.T, owner string) {
	t.Helper()
	for range 1200 {
		found := false
		for _, l := range f.lives(t) {
			found = found || l.Owner == owner
		}
		if !found {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the work of the dead life %s was not recovered within a minute", owner)
}
