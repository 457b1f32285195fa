package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
		// A request refused whole (store_unavailable: the pool's first
		// connection after the restart broke) has no results: try again.
		r := postTo(t, f.base(i)+"/v1/calls", fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"c","tool":"up__count","arguments":{"key":%q}}]}`, key, key))
		if rs, _ := r["results"].([]any); len(rs) > 0 {
			if r = rs[0].(map[string]any); r["status"] == "success" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s does not serve again after the database came back: %v", f.names[i], r)
		}
	}
}

// withStore opens the shared store at url, hands it to f, and closes it
// when f returns (or fails t).
func withStore(t *testing.T, url string, f func(st *postgres.Store)) {
	t.Helper()
	st, err := postgres.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f(st)
}

// lives returns the lives the store holds, by instance name.
func lives(t *testing.T, url string, ttl time.Duration) map[string][]postgres.Life {
	t.Helper()
	var ls []postgres.Life
	withStore(t, url, func(st *postgres.Store) {
		var err error
		if ls, err = st.Lives(t.Context(), ttl); err != nil {
			t.Fatal(err)
		}
	})
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
	withStore(t, url, func(pg *postgres.Store) {
		if rep, err := audit.Verify(t.Context(), pg); err != nil || rep.Events == 0 {
			t.Fatalf("audit.Verify after the outage = %+v, %v", rep, err)
		}
	})
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

// gates is an upstream whose tool gate (a write) waits until the test
// opens its key's gate, counting its runs.
type gates struct {
	mu      sync.Mutex
	runs    map[string]int
	open    map[string]chan struct{}
	started chan string
}

func (g *gates) gate(key string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open[key] == nil {
		g.open[key] = make(chan struct{})
	}
	return g.open[key]
}

func (g *gates) count(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs[key]
}

func gateUpstream(t *testing.T) (*gates, string) {
	g := &gates{runs: map[string]int{}, open: map[string]chan struct{}{}, started: make(chan string, 64)}
	s := mcp.NewServer(&mcp.Implementation{Name: "gates", Version: "1"}, nil)
	type keyed struct {
		Key string `json:"key"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "gate", Description: "Wait for the gate, then pass."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in keyed) (*mcp.CallToolResult, any, error) {
			g.mu.Lock()
			g.runs[in.Key]++
			g.mu.Unlock()
			g.started <- in.Key
			select {
			case <-g.gate(in.Key):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `"passed ` + in.Key + `"`}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return g, srv.URL
}

// newGateFleet is newFleet with the gates upstream too (tools gate__gate).
func newGateFleet(t *testing.T, ttl string) (*fleet, *gates) {
	t.Helper()
	return gateFleet(t, ttl, "")
}

// gateFleet is newGateFleet with extra (YAML, such as a tools: section)
// added to each instance's configuration.
func gateFleet(t *testing.T, ttl, extra string) (*fleet, *gates) {
	t.Helper()
	f := &fleet{t: t, pg: pgtest.Own(t), names: [2]string{"a", "b"}}
	var err error
	if f.url, err = f.pg.CreateDatabase(context.Background(), "reach"); err != nil {
		t.Fatal(err)
	}
	var upURL, gateURL string
	f.up, upURL = sharedUpstream(t)
	g, gateURL := gateUpstream(t)
	for i := range 2 {
		f.addr[i], f.data[i] = freeAddr(t), t.TempDir()
		f.cfg[i] = writeConfig(t, fmt.Sprintf(`store: %s
instance: %s
instance_ttl: %s
upstreams:
  - {name: up, url: '%s'}
  - {name: gate, url: '%s'}
budgets:
  default: {tool_calls: 100000, wall: 1h}
%s`, f.url, f.names[i], ttl, upURL, gateURL, extra))
		f.start(i)
	}
	t.Cleanup(func() {
		for i := range 2 {
			f.stop(i)
		}
	})
	return f, g
}

// gateOn calls gate__gate with key in request id (call id "g") on
// instance i and returns once the upstream runs it; the call's first
// result comes on the channel.
func gateOn(t *testing.T, f *fleet, g *gates, i int, id, key string) <-chan map[string]any {
	t.Helper()
	ch := postCalls(f, i, fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"g","tool":"gate__gate","arguments":{"key":%q}}]}`, id, key))
	awaitGate(t, g, key)
	return ch
}

// postCalls posts body to instance i's /v1/calls in the background; the
// answer's first result (the whole answer if it has none, nil if there
// is no answer) comes on the channel.
func postCalls(f *fleet, i int, body string) <-chan map[string]any {
	ch := make(chan map[string]any, 1)
	go func() {
		client := &http.Client{Timeout: 3 * time.Minute}
		var out map[string]any
		if resp, err := client.Post(f.base(i)+"/v1/calls", "application/json", strings.NewReader(body)); err == nil {
			json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
		}
		if r, _ := out["results"].([]any); len(r) > 0 {
			ch <- r[0].(map[string]any)
			return
		}
		ch <- out
	}()
	return ch
}

// awaitGate waits until the gate upstream begins the call of key.
func awaitGate(t *testing.T, g *gates, key string) {
	t.Helper()
	select {
	case k := <-g.started:
		if k != key {
			t.Fatalf("the upstream began %s, want %s", k, key)
		}
	case <-time.After(time.Minute):
		t.Fatalf("gate %s did not reach the upstream", key)
	}
}

// retryOn calls gate__gate with key again in request id (call id "g",
// the call's idempotency key) through instance i, in the background.
func retryOn(t *testing.T, f *fleet, i int, id, key string) <-chan map[string]any {
	return postCalls(f, i, fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"g","tool":"gate__gate","arguments":{"key":%q}}]}`, id, key))
}

// storedRequest reads request id from the shared store.
func storedRequest(t *testing.T, url, id string) *store.Request {
	t.Helper()
	var r *store.Request
	withStore(t, url, func(st *postgres.Store) {
		var err error
		if r, err = st.GetRequest(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	})
	return r
}

// TestChaos19DatabaseDownPastTTL: PostgreSQL stopped for three TTLs while
// a call runs on each instance; one call ends during the outage, the
// other after. Neither instance takes the other (or itself) for dead once
// the database is back: no request is interrupted, the call still running
// goes on where it runs and nowhere else, each ran once, a retry of each
// through the other instance does not run it again, and the chain
// verifies.
func TestChaos19DatabaseDownPastTTL(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, g := newGateFleet(t, "2s")
	doneA := gateOn(t, f, g, 0, "r-a", "ga")
	doneB := gateOn(t, f, g, 1, "r-b", "gb")
	if err := f.pg.Halt("immediate"); err != nil {
		t.Fatal(err)
	}
	// The outage: three TTLs (2s) with no heartbeat. While it lasts, the
	// call on a ends: its upstream ran, its record cannot be written.
	close(g.gate("ga"))
	resA := <-doneA
	t.Logf("the call that ended during the outage got: %v", resA)
	time.Sleep(3 * 2 * time.Second)
	if err := f.pg.Resume(); err != nil {
		t.Fatal(err)
	}
	back := serverNow(t, f.url)
	servesAgain(t, f, 0)
	servesAgain(t, f, 1)
	heartbeatsPast(t, f, back, 3*2*time.Second)
	if s := storedStates(t, f.url); s["interrupted"] != 0 || s["stopped"] != 0 {
		t.Fatalf("requests by state after the outage: %v; want none interrupted or stopped", s)
	}
	if r := storedRequest(t, f.url, "r-b"); r.State != "running" {
		t.Fatalf("r-b, whose call runs on b, is stored %s after the outage; want running", r.State)
	}
	// A retry of r-b's running call through a waits for it (b is alive)
	// and replays its result; it neither runs it again nor settles it as
	// interrupted.
	retryB := retryOn(t, f, 0, "r-b", "gb")
	heartbeatsPast(t, f, serverNow(t, f.url), 2*time.Second) // the retry has been waiting a while
	close(g.gate("gb"))
	if r := <-doneB; r["status"] != "success" {
		t.Fatalf("r-b's call on b, its gate opened after the outage: %v; want success", r)
	}
	if r := <-retryB; r["status"] != "success" || g.count("gb") != 1 {
		t.Fatalf("r-b's call, running on b, retried on a: %v, ran %d times; want its result replayed, run once", r, g.count("gb"))
	}
	// A retry of r-a's call, which ended during the outage, through b.
	retry := callHTTP(t, f.base(1), "r-a", "g", "gate__gate", `{"key":"ga"}`, "")
	t.Logf("r-a's call retried on b: %v", retry)
	if g.count("ga") != 1 {
		t.Fatalf("r-a's call ran %d times; want once", g.count("ga"))
	}
	if resA["status"] != "success" && strings.Contains(fmt.Sprint(resA), "Nothing ran") {
		t.Fatalf("r-a's call ran, yet its answer says nothing ran: %v", resA)
	}
	verifyAudit(t, f.url)
}

// TestChaos19RetryWhileRunningElsewhere: a call runs on b; its retry
// through a, once a has read who is alive well after the call's claim,
// waits for it and replays its result, instead of settling it as
// interrupted (the gateway stopped, it may have run) while b runs it, and
// answering so for ever after: the claim's owner is the life
// that heartbeats. It used to be a life of the idempotency records' own,
// which no heartbeat names, so that every claim of another instance
// looked dead a second after it was made, to a retry and to a recovery.
func TestChaos19RetryWhileRunningElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, g := newGateFleet(t, "2s")
	done := gateOn(t, f, g, 1, "r-run", "run")
	// a reads who is alive, by the server's clock, a TTL after the claim.
	heartbeatsPast(t, f, serverNow(t, f.url), 2*time.Second)
	retry := retryOn(t, f, 0, "r-run", "run")
	heartbeatsPast(t, f, serverNow(t, f.url), 2*time.Second) // the retry has been waiting a while
	close(g.gate("run"))
	if r := <-done; r["status"] != "success" {
		t.Fatalf("r-run's call on b: %v; want success", r)
	}
	if r := <-retry; r["status"] != "success" || g.count("run") != 1 {
		t.Fatalf("r-run's call, running on b, retried on a: %v, ran %d times; want its result replayed, run once", r, g.count("run"))
	}
	// Its retry now replays its result, on either instance.
	for i := range 2 {
		if r := callHTTP(t, f.base(i), "r-run", "g", "gate__gate", `{"key":"run"}`, ""); r["status"] != "success" || g.count("run") != 1 {
			t.Fatalf("r-run's call retried on %s after it ended: %v, ran %d times; want its result replayed, run once", f.names[i], r, g.count("run"))
		}
	}
}

// seenAfter waits until instance name has heartbeated, by the server's
// clock, after since.
func seenAfter(t *testing.T, f *fleet, name string, since time.Time) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		for _, l := range lives(t, f.url, time.Hour)[name] {
			if l.Seen.After(since) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s did not heartbeat after %s", name, since)
		}
	}
}

// TestChaos19FirstBackJudgesNoOne: after an outage, the instance whose
// heartbeats come back first reads the other's as old, as the other could
// not heartbeat either. For a TTL after its own heartbeats came back, it
// takes no one for dead: a retry through it of a call the other still
// runs (in a request it has a part of) waits for that call and replays its
// result, instead of settling it as interrupted at once; a call of a
// request only the other runs is refused store_unavailable, to try again,
// instead of request_interrupted (start a new request). b is held stopped (SIGSTOP) while the
// database comes back, so that a is first, and let go once the retry
// waits (within a's TTL of 5s).
func TestChaos19FirstBackJudgesNoOne(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, g := newGateFleet(t, "5s")
	// r-first runs on both (a call done on a, one running on b); r-solo
	// on b only.
	if r := callHTTP(t, f.base(0), "r-first", "c", "up__count", `{"key":"first"}`, ""); r["status"] != "success" {
		t.Fatalf("r-first's first call on a: %v", r)
	}
	done := gateOn(t, f, g, 1, "r-first", "first")
	doneSolo := gateOn(t, f, g, 1, "r-solo", "solo")
	if err := f.pg.Halt("fast"); err != nil {
		t.Fatal(err)
	}
	if err := f.cmd[1].Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			f.cmd[1].Process.Signal(syscall.SIGCONT)
		}
	}()
	// An outage longer than the TTL: b's last heartbeat is older than
	// that when the database is back.
	time.Sleep(6 * time.Second)
	if err := f.pg.Resume(); err != nil {
		t.Fatal(err)
	}
	back := serverNow(t, f.url)
	seenAfter(t, f, "a", back)
	if ls := lives(t, f.url, 5*time.Second)["b"]; len(ls) != 1 || ls[0].Alive {
		t.Fatalf("b, held stopped, heartbeated after the database came back: %+v", ls)
	}
	// A call of r-solo on a: b, which runs it, looks dead; a refuses it as
	// the store being back a moment ago, to try again, not as interrupted.
	if r := <-retryOn(t, f, 0, "r-solo", "solo"); errCode(r) != "store_unavailable" ||
		!strings.Contains(fmt.Sprint(r), "Try again") || g.count("solo") != 1 {
		t.Fatalf("r-solo's call retried on a while b, which runs it, was not seen since the store came back: %v (ran %d times); want store_unavailable, to try again", r, g.count("solo"))
	}
	retry := retryOn(t, f, 0, "r-first", "first")
	// The retry reaches the claim while b, stopped, looks dead to a: a
	// second of a's heartbeats, by the server's clock.
	now := serverNow(t, f.url)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if ls := lives(t, f.url, time.Hour)["a"]; len(ls) == 1 && ls[0].Seen.After(now.Add(time.Second)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a does not heartbeat")
		}
	}
	select {
	case r := <-retry:
		t.Fatalf("the retry on a of r-first's call, running on b, answered while b was stopped: %v; want it to wait", r)
	default:
	}
	f.cmd[1].Process.Signal(syscall.SIGCONT)
	stopped = false
	seenAfter(t, f, "b", back)
	close(g.gate("first"))
	if r := <-done; r["status"] != "success" {
		t.Fatalf("r-first's call on b: %v; want success", r)
	}
	if r := <-retry; r["status"] != "success" || g.count("first") != 1 {
		t.Fatalf("r-first's call, running on b, retried on a: %v, ran %d times; want its result replayed, run once", r, g.count("first"))
	}
	close(g.gate("solo"))
	if r := <-doneSolo; r["status"] != "success" {
		t.Fatalf("r-solo's call on b: %v; want success", r)
	}
	if r := callHTTP(t, f.base(0), "r-solo", "g", "gate__gate", `{"key":"solo"}`, ""); r["status"] != "success" || g.count("solo") != 1 {
		t.Fatalf("r-solo's call retried on a once b was back and it ended: %v, ran %d times; want its result replayed", r, g.count("solo"))
	}
}

// TestChaos19SlowStore: the requests table held locked (an operator's
// migration, a long transaction) while calls come: a call that cannot
// begin its request is refused store_unavailable, to try again, while the
// lock is still held, instead of waiting for it for ever; once it is let
// go, calls run again.
func TestChaos19SlowStore(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, _ := newGateFleet(t, "2s")
	servesAgain(t, f, 0)
	admin, err := pgx.Connect(t.Context(), f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	tx, err := admin.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `LOCK TABLE requests IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	locked := true
	defer func() {
		if locked {
			tx.Rollback(context.Background())
		}
	}()
	r := <-retryOn(t, f, 0, "r-slow", "slow-never-opened")
	if errCode(r) != "store_unavailable" || !strings.Contains(fmt.Sprint(r), "Try again") {
		t.Fatalf("a call while the requests table is locked: %v; want store_unavailable, to try again", r)
	}
	tx.Rollback(context.Background())
	locked = false
	servesAgain(t, f, 0)
	servesAgain(t, f, 1)
}
