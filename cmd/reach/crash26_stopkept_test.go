package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach/internal/store/postgres"
)

// TestCrash26StopKeptThenKilled: two instances on one PostgreSQL; request
// r-k books through a and holds a call on b. The store refuses every stop
// (its reach_stop raises an error), and the request is stopped through
// a: a's part is stopped, the store does not take the stop, a keeps it
// and is killed (kill -9) there (crash point stop.kept). The store takes
// stops again, and a starts again over its data folder. Then:
//
//   - the stop is stored, with a's cause: the call on b is cancelled by
//     it (before, the stop died with a, and b's call ran on to its end);
//   - the request ends stopped, a's booking undone once, nothing booked
//     twice, and a call naming it is refused as stopped on both;
//   - the stops file is gone; the audit chain verifies.
//
// Once more with a's restart killed too, as it stored the stop (crash
// point stops.restored, the file not removed yet): the start after it
// stores it again, changing nothing, and the same holds.
func TestCrash26StopKeptThenKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	for _, restart := range []string{"", "stops.restored"} {
		t.Run("restarted"+map[string]string{"": "", "stops.restored": " killed at stops.restored"}[restart], func(t *testing.T) {
			stopKeptThenKilled(t, restart)
		})
	}
}

// stopKeptThenKilled is a case of TestCrash26StopKeptThenKilled: a's
// restart is killed at point first, unless it is "".
func stopKeptThenKilled(t *testing.T, point string) {
	f := newFleetWith(t, "")
	f.restartWith(t, 1, "idle_gap: 2s\n")
	f.stop(0)
	var reached <-chan struct{}
	f.cmd[0], reached = startReachAt(t, f.cfg[0], f.addr[0], f.data[0], "stop.kept")
	if r := callHTTP(t, f.base(0), "r-k", "b1", "up__book", `{"key":"ka"}`, ""); r["status"] != "success" {
		t.Fatalf("book on a: %v", r)
	}
	held := make(chan map[string]any, 1)
	go func() {
		body := `{"request_id":"r-k","tool_calls":[{"call_id":"h1","tool":"up__hold","arguments":{"key":"hk"}}]}`
		var out struct{ Results []map[string]any }
		resp, err := (&http.Client{Timeout: 3 * time.Minute}).Post(f.base(1)+"/v1/calls", "application/json", strings.NewReader(body))
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
		}
		if len(out.Results) == 1 {
			held <- out.Results[0]
		} else {
			held <- map[string]any{"status": "no answer", "error": map[string]any{"message": err}}
		}
	}()
	select {
	case <-f.up.started:
	case <-time.After(time.Minute):
		t.Fatal("the call on b never reached the upstream")
	}

	restore := refuseStore(t, f.url, "reach_stop(text,integer,text,bigint)")
	go func() { // cut off by the kill
		if resp, err := http.Post(f.base(0)+"/v1/requests/r-k/cancel", "application/json", strings.NewReader(`{"reason":"enough"}`)); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("a never reached stop.kept: the store took the stop, or a did not keep it")
	}
	f.kill(0)
	restore()
	stops := filepath.Join(f.data[0], "stops-kept-a.jsonl")
	if b, err := os.ReadFile(stops); err != nil || !strings.Contains(string(b), `"r-k"`) {
		t.Fatalf("a's data folder does not keep the stop: %q (%v)", b, err)
	}

	if point != "" {
		var reached <-chan struct{}
		f.cmd[0], reached = startReachAt(t, f.cfg[0], f.addr[0], f.data[0], point)
		select {
		case <-reached:
		case <-time.After(time.Minute):
			t.Fatalf("a's restart never reached %s", point)
		}
		f.kill(0)
		if _, err := os.Stat(stops); err != nil {
			t.Fatalf("the stops file is gone though the start that stored its stop was killed before it removed it: %v", err)
		}
	}
	f.start(0)
	select {
	case r := <-held:
		if r["status"] == "success" || !strings.HasPrefix(errCode(r), "stopped") {
			t.Errorf("the call on b ended %v; want it stopped by a's stop, stored by a's next start", r)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the call on b has no answer two minutes after a's restart")
	}
	if state, ended := f.awaitEnded("r-k", 2*time.Minute, nil); !ended || !strings.HasPrefix(state, "stopped") {
		t.Errorf("r-k is stored %s (ended %v); want it stopped and ended", state, ended)
	}
	// a's booking is undone once: by a before the kill, or by the
	// recovery of a's dead part of the stopped request. Counted once
	// every undo could have run: the request ended (above), every dead
	// life of a recovered and forgotten, and no dead letter of the request
	// taken (a retry running). Before, the count was read as soon as the
	// first undo ran, and a second one run late went unseen.
	awaitStopSettled(t, f.url, "r-k")
	if n := deadLettersOf(t, f.url, "r-k"); n != 0 {
		t.Errorf("r-k has %d dead letters; want none, its undo having run", n)
	}
	for what, want := range map[string]int{"book ka": 1, "unbook ka": 1, "hold hk": 1} {
		if n := f.up.count(what); n != want {
			t.Errorf("%s ran %d times; want %d", what, n, want)
		}
	}
	for i := range 2 {
		r := callHTTP(t, f.base(i), "r-k", "b3", "up__book", `{"key":"kc"}`, "")
		if r["status"] == "success" || !strings.HasPrefix(errCode(r), "stopped") {
			t.Errorf("a booking in the stopped request through %s got %v; want it refused as stopped", f.names[i], r)
		}
	}
	if _, err := os.Stat(stops); !os.IsNotExist(err) {
		t.Errorf("the stops file is still in a's data folder once its stop is stored: %v", err)
	}
	verifyFleetAudit(t, f)
}

// awaitStopSettled waits until the store lists no life that is not alive
// (each dead one recovered, its parts' undos run, and forgotten) and no
// dead letter of request id is taken (a retry of its undo in flight).
func awaitStopSettled(t *testing.T, url, id string) {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, url, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var dead []string
	taken := -1
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		lives, err := st.Lives(ctx, 2*time.Second)
		if err != nil {
			continue
		}
		dead = dead[:0]
		for _, l := range lives {
			if !l.Alive {
				dead = append(dead, l.Owner)
			}
		}
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE request = $1 AND state = 'taken'`, id).Scan(&taken); err != nil {
			continue
		}
		if len(dead) == 0 && taken == 0 {
			return
		}
	}
	t.Fatalf("not settled within 3 minutes: dead lives %v, %d dead letters of %s taken", dead, taken, id)
}

// deadLettersOf counts the dead letters of request id.
func deadLettersOf(t *testing.T, url, id string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters WHERE request = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// refuseStore makes the function fn of the database at url raise an error
// until the function returned is called (or the test ends).
func refuseStore(t *testing.T, url, fn string) (restore func()) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	var def string
	if err := admin.QueryRow(ctx, `SELECT pg_get_functiondef($1::regprocedure)`, fn).Scan(&def); err != nil {
		t.Fatal(err)
	}
	const body = "BEGIN\n"
	if !strings.Contains(def, body) {
		t.Fatalf("%s is not as the test expects:\n%s", fn, def)
	}
	if _, err := admin.Exec(ctx, strings.Replace(def, body, "BEGIN\n\tRAISE EXCEPTION 'the store is down';\n", 1)); err != nil {
		t.Fatal(err)
	}
	done := false
	restore = func() {
		if done {
			return
		}
		done = true
		defer admin.Close(context.Background())
		if _, err := admin.Exec(ctx, def); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(restore)
	return restore
}
