package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/jackc/pgx/v5"
)

// The store going away under load (chaos19): PostgreSQL restarted (fast,
// then immediate) or stopped for longer than the instances' TTL while two
// `reach serve` processes take writes, and a table held locked. What must
// hold: a call the store cannot record is refused (store_unavailable,
// saying to retry), never run unrecorded; no write runs twice; both
// instances serve again without a restart of their own, heartbeating
// under their first lives; nothing is recovered as dead that was not; the
// audit chain verifies.

// writeLoad is writers calling up__count, each with a key of its own, over
// /v1/calls, spread over a fleet's two instances, until stopped.
type writeLoad struct {
	f    *fleet
	stop atomic.Bool
	wg   sync.WaitGroup
	mu   sync.Mutex
	// outcome of each call, by its key: "success", "error CODE", "503
	// CODE" (refused before the request began), "no answer: ..."
	outcome map[string]string
	text    map[string]string // the refusal's message and suggestion
}

func startWriteLoad(f *fleet, round string, writers int) *writeLoad {
	l := &writeLoad{f: f, outcome: map[string]string{}, text: map[string]string{}}
	for w := range writers {
		l.wg.Go(func() {
			client := &http.Client{Timeout: 45 * time.Second}
			for i := 0; !l.stop.Load(); i++ {
				key := fmt.Sprintf("%s-w%d-%d", round, w, i)
				body := fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"c","tool":"up__count","arguments":{"key":%q}}]}`, key, key)
				resp, err := client.Post(f.base((w+i)%2)+"/v1/calls", "application/json", strings.NewReader(body))
				outcome, text := "", ""
				if err != nil {
					outcome = "no answer: " + err.Error()
				} else {
					var out struct {
						Results []struct {
							Status string         `json:"status"`
							Error  map[string]any `json:"error"`
						} `json:"results"`
						Error map[string]any `json:"error"`
					}
					json.NewDecoder(resp.Body).Decode(&out)
					resp.Body.Close()
					switch {
					case len(out.Results) > 0:
						outcome = out.Results[0].Status
						if e := out.Results[0].Error; e != nil {
							outcome += fmt.Sprintf(" %v", e["code"])
							text = fmt.Sprintf("%v %v", e["message"], e["suggestion"])
						}
					case out.Error != nil:
						outcome = fmt.Sprintf("%d %v", resp.StatusCode, out.Error["code"])
						text = fmt.Sprintf("%v %v", out.Error["message"], out.Error["suggestion"])
					default:
						outcome = fmt.Sprintf("%d unstructured", resp.StatusCode)
					}
				}
				l.mu.Lock()
				l.outcome[key], l.text[key] = outcome, text
				l.mu.Unlock()
			}
		})
	}
	return l
}

// finish stops the writers and checks what they saw: every call answered,
// a success ran once, a refusal of the store ran never and says to retry,
// nothing ran twice. It returns the outcomes counted.
func (l *writeLoad) finish(t *testing.T) map[string]int {
	t.Helper()
	l.stop.Store(true)
	l.wg.Wait()
	counts := map[string]int{}
	for key, o := range l.outcome {
		counts[o]++
		runs := l.f.up.count("count " + key)
		switch {
		case strings.HasPrefix(o, "no answer") || strings.HasSuffix(o, "unstructured"):
			t.Errorf("call %s: %s; want a result or a structured error", key, o)
		case o == "success":
			if runs != 1 {
				t.Errorf("call %s succeeded and ran %d times, want once", key, runs)
			}
		case strings.HasSuffix(o, "store_unavailable"):
			if runs != 0 {
				t.Errorf("call %s was refused (%s) and ran %d times: a call the store could not record ran", key, o, runs)
			}
			if !strings.Contains(l.text[key], "Try again") {
				t.Errorf("call %s refused with %q: the refusal does not say to try again", key, l.text[key])
			}
		default:
			if runs > 1 {
				t.Errorf("call %s (%s) ran %d times", key, o, runs)
			}
			if strings.Contains(l.text[key], "Nothing ran") && runs != 0 {
				t.Errorf("call %s refused (%s: %s), yet it ran", key, o, l.text[key])
			}
			if !strings.Contains(l.text[key], "Try again") {
				t.Errorf("call %s refused with %q: the refusal does not say to try again", key, l.text[key])
			}
		}
	}
	return counts
}

// servesAgain waits until instance i of f runs a write call, and fails t
// if it does not within a minute (the database is back by then).
func servesAgain(t *testing.T, f *fleet, i int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		key := fmt.Sprintf("after-%d-%d", i, time.Now().UnixNano())
		r := callHTTP(t, f.base(i), key, "c", "up__count", fmt.Sprintf(`{"key":%q}`, key), "")
		if r["status"] == "success" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s does not serve again after the database came back: %v", f.names[i], r)
		}
	}
}

// lives returns the lives the store holds, by instance name.
func lives(t *testing.T, url string, ttl time.Duration) map[string][]postgres.Life {
	t.Helper()
	st, err := postgres.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ls, err := st.Lives(t.Context(), ttl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]postgres.Life{}
	for _, l := range ls {
		out[l.Name] = append(out[l.Name], l)
	}
	return out
}

// heartbeatsPast waits until every instance of f has heartbeated, by the
// server's clock, later than since plus after: a state, not a duration
// on this side, so that a recovery that would take a live instance for
// dead has had the time to run. It fails t if an instance has no live
// life or more than one.
func heartbeatsPast(t *testing.T, f *fleet, since time.Time, after time.Duration) map[string][]postgres.Life {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		ls := lives(t, f.url, 2*time.Second)
		done := true
		for _, name := range f.names {
			if len(ls[name]) != 1 {
				t.Fatalf("instance %s has %d lives on the store, want the one it began with: %+v", name, len(ls[name]), ls[name])
			}
			if !ls[name][0].Alive || !ls[name][0].Seen.After(since.Add(after)) {
				done = false
			}
		}
		if done {
			return ls
		}
		if time.Now().After(deadline) {
			t.Fatalf("the instances' heartbeats did not come back: %+v", ls)
		}
	}
}

// serverNow is the database server's clock.
func serverNow(t *testing.T, url string) time.Time {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var now time.Time
	if err := conn.QueryRow(t.Context(), `SELECT now()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

// storedStates counts the stored requests by state.
func storedStates(t *testing.T, url string) map[string]int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT state, count(*) FROM requests GROUP BY state`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		out[s] = n
	}
	return out
}

// verifyAudit checks the shared chain, through the package and through
// `reach audit verify --store`.
func verifyAudit(t *testing.T, url string) {
	t.Helper()
	pg, err := postgres.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	rep, err := audit.Verify(t.Context(), pg)
	if err != nil || rep.Events == 0 {
		t.Fatalf("audit.Verify after the outage = %+v, %v", rep, err)
	}
	cmd := exec.Command(exe(t), "audit", "verify", "--store", url)
	cmd.Env = append(os.Environ(), "REACH_AS_CLI=1")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "chain ok: ") {
		t.Fatalf("reach audit verify --store after the outage: %v: %s", err, out)
	}
}

// holdOn starts a hold call in request id on instance i, which runs until
// cancel; it returns once the upstream has it, and done gets the call's
// result.
func holdOn(t *testing.T, f *fleet, i int, id string) (cancel func(), done <-chan map[string]any) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan map[string]any, 1)
	go func() {
		body := fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"h","tool":"up__hold","arguments":{"key":%q}}]}`, id, id)
		req, _ := http.NewRequestWithContext(ctx, "POST", f.base(i)+"/v1/calls", strings.NewReader(body))
		var out map[string]any
		if resp, err := http.DefaultClient.Do(req); err == nil {
			json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
		}
		ch <- out
	}()
	select {
	case k := <-f.up.started:
		if k != id {
			t.Fatalf("the upstream began %s, want %s", k, id)
		}
	case <-time.After(time.Minute):
		t.Fatalf("hold %s did not reach the upstream", id)
	}
	return cancel, ch
}

// TestChaos19DatabaseRestarts: PostgreSQL restarted with -m fast, then
// with -m immediate, under four writers on two instances and with a call
// held running on a: calls while it is down are refused store_unavailable
// and never ran, none ran twice, both instances serve again under their
// first lives, the held request is not taken for dead, and the chain
// verifies.
func TestChaos19DatabaseRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleet(t)
	release, held := holdOn(t, f, 0, "r-held")
	for _, mode := range []string{"fast", "immediate"} {
		l := startWriteLoad(f, mode, 4)
		servesAgain(t, f, 1) // the load runs
		if err := f.pg.RestartMode(mode); err != nil {
			t.Fatal(err)
		}
		back := serverNow(t, f.url)
		servesAgain(t, f, 0)
		servesAgain(t, f, 1)
		counts := l.finish(t)
		t.Logf("-m %s: outcomes %v", mode, counts)
		if counts["success"] == 0 {
			t.Errorf("-m %s: no call succeeded", mode)
		}
		// Past three TTLs of heartbeats after the restart: a recovery
		// taking a live instance for dead would have run by then.
		heartbeatsPast(t, f, back, 3*2*time.Second)
		if s := storedStates(t, f.url); s["interrupted"] != 0 || s["stopped"] != 0 {
			t.Fatalf("-m %s: requests by state after the restart: %v; want none interrupted or stopped", mode, s)
		}
		if got := getJSONTB(t, f.base(0)+"/v1/requests/r-held"); got["state"] != "running" {
			t.Fatalf("-m %s: r-held, held on a: %v; want running", mode, got)
		}
	}
	release()
	<-held
	if n := f.up.count("hold r-held"); n != 1 {
		t.Errorf("hold r-held ran %d times, want once", n)
	}
	verifyAudit(t, f.url)
}
