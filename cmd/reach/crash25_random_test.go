package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
)

// pgRandomPoints are the crash points (docs/STATE.md) that
// TestCrash25RandomOnInstances arms on one instance of three sharing a
// PostgreSQL store, each with the most times N it picks for "NAME#N".
// The recovery points are armed on an instance started while another
// instance's dead life waits to be recovered, which the third instance
// recovers too: the two race for the same dead life.
var pgRandomPoints = []struct {
	name string
	most int
}{
	{"request.begun", 10}, {"claimed", 20}, {"executing", 20}, {"ended", 20}, {"commit", 40},
	{"budget.admitted", 30}, {"request.stopped", 2}, {"request.ended", 10}, {"request.settled", 10},
	{"deadletter.added", 2}, {"approval.pending", 2}, {"audit.appended", 20},
	{"request.handed", 2}, {"request.left", 2}, {"request.released", 2},
	{"approval.approved", 2}, {"approval.used", 2},
	// Reached by the model turns of the load (their holds on the shared
	// ledger) and the writer's held batches.
	{"batch.held", 20}, {"budget.charged", 6}, {"budget.unheld", 3}, {"model.answered", 3},
}

// recoveryPoints are the points of a recovery of a dead life.
var recoveryPoints = []string{"recovery.undone", "recovery.interrupted", "recovery.stopped", "deadletter.added"}

// pgTrio is three `reach serve` processes, a, b and c, on one PostgreSQL.
type pgTrio struct {
	t     *testing.T
	pg    *pgtest.Cluster
	url   string
	cfg   [3]string
	addr  [3]string
	data  [3]string
	cmd   [3]*exec.Cmd
	names [3]string
}

func (f *pgTrio) base(i int) string { return "http://" + f.addr[i] }

// start starts instance i, armed at point unless it is "".
func (f *pgTrio) start(i int, point string) <-chan struct{} {
	f.t.Helper()
	if point == "" {
		f.cmd[i] = startReach(f.t, f.cfg[i], f.addr[i], f.data[i])
		return nil
	}
	var reached <-chan struct{}
	f.cmd[i], reached = startReachAt(f.t, f.cfg[i], f.addr[i], f.data[i], point)
	return reached
}

// kill ends instance i at once (SIGKILL), if it runs.
func (f *pgTrio) kill(i int) {
	if c := f.cmd[i]; c != nil {
		c.Process.Signal(syscall.SIGKILL)
		c.Wait()
		f.cmd[i] = nil
	}
}

// stop ends instance i as an operator would (SIGTERM), if it runs.
func (f *pgTrio) stop(i int) {
	if c := f.cmd[i]; c != nil {
		c.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			c.Process.Kill()
			<-done
		}
		f.cmd[i] = nil
	}
}

// TestCrash25RandomOnInstances is TestCrashAtRandomPoints on three
// instances sharing one PostgreSQL: agents run chains of three bookings
// (each with an undo; some undos always fail) whose legs go to different
// instances, end or stop them through any instance, and now and then make
// a high-risk call that waits for approval; up to two approvals pending
// from earlier rounds are approved under the load through one instance,
// their calls repeated through another. Each round, under that load,
// one of these faults: an instance killed (kill -9) at a random moment;
// one killed at the Nth time it reaches a crash point picked among
// pgRandomPoints; two killed at once; one killed while another's dead
// life waits for recovery, the instance started again armed at a point
// of the recovery that the third races it for; PostgreSQL restarted
// (`pg_ctl restart -m immediate`) mid-write; every connection of the
// instances cut by the server (pg_terminate_backend) mid-transaction.
// Then every instance is started again, and once every dead life was
// recovered and every request has ended (idle_gap), checks:
//
//   - no write was applied twice: no booking, and no undo, ran twice for
//     one idempotency key, nor twice for one leg;
//   - every leg of a request stored interrupted or stopped was undone
//     once, or its undo is a dead letter, or the kill cut the booking
//     off; no leg of a request that ended was undone;
//   - every request an agent's stop was answered stopped for is stored
//     stopped, and a call naming it, or an interrupted one, is refused on
//     every instance;
//   - the audit chain verifies;
//   - no approved call ran twice; every approval that was pending is
//     still pending, and at the end, approved, its call runs once however
//     often it is repeated (one approved under the load and cut off by a
//     kill after its checkpoint said it runs is answered interrupted, and
//     ran at most once);
//   - under the load, model turns (a token budget: each holds its
//     prompt and answer's cap on the shared ledger) go through every
//     instance: once settled, no turn holds anything on the ledger (a
//     dead life's holds go with it), and each turn request's ledger
//     counts every turn answered, once: its turns and tokens no fewer
//     than the answered ones spent, no more than those asked could.
//
// A seventh fault: the store refuses every stop (reach_stop raises an
// error) while an instance armed at stop.kept is stopped through, and
// that instance is killed there, with its stop kept in its data folder;
// the store then takes stops again, and its restart stores the stop (a
// request whose stop was answered is stored stopped, as above).
//
// The seed is logged; REACH_CRASH25_SEED runs one again, and
// REACH_CRASH25_ROUNDS (default 4) sets how many faults.
func TestCrash25RandomOnInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("REACH_CRASH25_SEED"); v != "" {
		if _, err := fmt.Sscan(v, &seed); err != nil {
			t.Fatalf("REACH_CRASH25_SEED=%q: %v", v, err)
		}
	}
	rounds := 4
	if v := os.Getenv("REACH_CRASH25_ROUNDS"); v != "" {
		if _, err := fmt.Sscan(v, &rounds); err != nil || rounds < 1 {
			t.Fatalf("REACH_CRASH25_ROUNDS=%q: want a count", v)
		}
	}
	t.Logf("seed %d (REACH_CRASH25_SEED), %d rounds", seed, rounds)
	rng := rand.New(rand.NewPCG(seed, 25))

	fx := newSideEffects(failsUndo)
	up := sideEffectsUpstream(t, fx)
	model := fakeModel(t)
	f := &pgTrio{t: t, pg: pgtest.Own(t), names: [3]string{"a", "b", "c"}}
	var err error
	if f.url, err = f.pg.CreateDatabase(t.Context(), "reach"); err != nil {
		t.Fatal(err)
	}
	for i := range f.names {
		f.addr[i], f.data[i] = freeAddr(t), t.TempDir()
		f.cfg[i] = writeConfig(t, fmt.Sprintf("store: %s\ninstance: %s\ninstance_ttl: 2s\nidle_gap: 2s\n", f.url, f.names[i])+
			travelYAML(up, `  travel__close: {access: high_risk}
budgets:
  default: {tool_calls: 1000, tokens: 100000, wall: 10m}
model: {base_url: '`+model+`'}
`))
		f.start(i, "")
	}
	t.Cleanup(func() {
		for i := range f.names {
			f.stop(i)
		}
	})

	var chains atomic.Int64
	var mu sync.Mutex
	pending := map[string]string{} // approval id -> the idempotency key of its call
	decided := map[string]string{} // the same, of those approved (or maybe) under load
	stopped := map[string]bool{}   // requests whose stop was answered stopped
	aprID := regexp.MustCompile(`apr_[0-9a-f]+`)
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(i int, path, body string) (*http.Response, error) {
		return client.Post(f.base(i)+path, "application/json", strings.NewReader(body))
	}
	// agent runs chains, each leg on another instance, until halt is set
	// or an instance it calls does not answer.
	agent := func(halt *atomic.Bool) {
		for !halt.Load() {
			c := chains.Add(1)
			req := fmt.Sprintf("chain-%d", c)
			for step := 1; step <= 3; step++ {
				resp, err := post(int(c+int64(step))%3, "/v1/calls", fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"s%d","tool":"travel__book","arguments":{"chain":%d,"step":%d}}]}`,
					req, step, c, step))
				if err != nil {
					return
				}
				resp.Body.Close()
			}
			if stops(c) {
				resp, err := post(int(c)%3, "/v1/requests/"+req+"/cancel", `{"reason":"enough"}`)
				if err != nil {
					return
				}
				var out struct{ State string }
				json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if strings.HasPrefix(out.State, "stopped") {
					mu.Lock()
					stopped[req] = true
					mu.Unlock()
				}
				continue
			}
			if c%4 == 0 {
				key := fmt.Sprintf("close-%d", c)
				resp, err := post(int(c/4)%3, "/v1/calls", fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"x","tool":"travel__close","idempotency_key":%q,"arguments":{}}]}`, req, key))
				if err != nil {
					return
				}
				var out struct{ Results []callResult }
				json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if len(out.Results) == 1 && out.Results[0].Status == "pending" && out.Results[0].Error != nil {
					if id := aprID.FindString(out.Results[0].Error.Message); id != "" {
						mu.Lock()
						pending[id] = key
						mu.Unlock()
					}
				}
			}
			resp, err := post(int(c+2)%3, "/v1/requests/"+req+"/end", "")
			if err != nil {
				return
			}
			resp.Body.Close()
		}
	}
	// approver approves, under the load, up to two approvals pending from
	// earlier rounds, each through another instance than the next one
	// its call is repeated through (where the approved call runs).
	var approvals atomic.Int64
	approver := func(halt *atomic.Bool) {
		for range 2 {
			if halt.Load() {
				return
			}
			mu.Lock()
			var id, key string
			for id, key = range pending {
				break
			}
			if id != "" {
				delete(pending, id)
				decided[id] = key
			}
			mu.Unlock()
			if id == "" {
				return
			}
			n := int(approvals.Add(1))
			resp, err := post(n%3, "/v1/approvals/"+id+"/approve", `{"reason":"ok"}`)
			if err != nil {
				return
			}
			resp.Body.Close()
			resp, err = post((n+1)%3, "/v1/calls", fmt.Sprintf(`{"tool_calls":[{"call_id":"x","tool":"travel__close","idempotency_key":%q,"arguments":{}}]}`, key))
			if err != nil {
				return
			}
			resp.Body.Close()
		}
	}
	// modeler makes model turns, two in each request (turn-N), through
	// one instance, then ends the request through another, until halt is
	// set or an instance does not answer. Through one instance: an
	// instance stopped (SIGTERM) between the two leaves its part, which
	// ends the request, and a turn naming it through another begins it
	// again, its ledger anew (docs/INSTANCES.md), which the checks would
	// count as turns lost.
	var turnRequests atomic.Int64
	asked, answered := map[string]int{}, map[string]int{}
	modeler := func(halt *atomic.Bool) {
		for !halt.Load() {
			n := turnRequests.Add(1)
			req := fmt.Sprintf("turn-%d", n)
			for range 2 {
				mu.Lock()
				asked[req]++
				mu.Unlock()
				hr, _ := http.NewRequest("POST", f.base(int(n)%3)+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"go"}]}`))
				hr.Header.Set("Content-Type", "application/json")
				hr.Header.Set("Reach-Request", req)
				resp, err := client.Do(hr)
				if err != nil {
					return
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					mu.Lock()
					answered[req]++
					mu.Unlock()
				}
			}
			resp, err := post(int(n+2)%3, "/v1/requests/"+req+"/end", "")
			if err != nil {
				return
			}
			resp.Body.Close()
		}
	}
	// moment waits a random moment of the load: when a fault strikes,
	// not a wait for a state.
	moment := func() { time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond) }

	for round := range rounds {
		var how string
		victim := rng.IntN(3)
		var reached <-chan struct{}
		fault := rng.IntN(7)
		var restore func()
		if fault == 6 { // armed where a stop the store refused is kept
			how = f.names[victim] + " killed at stop.kept, the store refusing stops"
			f.stop(victim)
			reached = f.start(victim, "stop.kept")
			restore = refuseStore(t, f.url, "reach_stop(text,integer,text,bigint)")
		}
		if fault == 1 { // armed at a point of the load
			p := pgRandomPoints[rng.IntN(len(pgRandomPoints))]
			how = fmt.Sprintf("%s killed at %s#%d", f.names[victim], p.name, 1+rng.IntN(p.most))
			f.stop(victim)
			reached = f.start(victim, how[strings.LastIndex(how, " ")+1:])
		}
		var halt atomic.Bool
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { agent(&halt) })
		}
		wg.Go(func() { approver(&halt) })
		wg.Go(func() { modeler(&halt) })
		switch fault {
		case 0:
			moment()
			f.kill(victim)
			how = f.names[victim] + " killed at a moment"
		case 1:
			select {
			case <-reached:
			case <-time.After(5 * time.Second):
				how += " (not reached: killed at 5s)"
			}
			f.kill(victim)
		case 2:
			other := (victim + 1 + rng.IntN(2)) % 3
			moment()
			f.kill(victim)
			moment()
			f.kill(other)
			how = fmt.Sprintf("%s and %s killed at moments", f.names[victim], f.names[other])
		case 3:
			// racer started again armed at a point of the recovery,
			// then victim killed: racer races the third for victim's
			// dead life.
			racer := (victim + 1 + rng.IntN(2)) % 3
			point := fmt.Sprintf("%s#1", recoveryPoints[rng.IntN(len(recoveryPoints))])
			moment()
			f.stop(racer)
			reached = f.start(racer, point)
			f.kill(victim)
			halt.Store(true)
			wg.Wait()
			select {
			case <-reached:
				how = fmt.Sprintf("%s killed at a moment, %s killed at %s recovering it", f.names[victim], f.names[racer], point)
			case <-f.settledOrNot(victim):
				how = fmt.Sprintf("%s killed at a moment, %s armed at %s (not reached: its dead life recovered without it)", f.names[victim], f.names[racer], point)
			}
			f.kill(racer)
		case 4:
			moment()
			if err := f.pg.Restart(); err != nil {
				t.Fatal(err)
			}
			how = "PostgreSQL restarted (immediate)"
		case 5:
			moment()
			n := f.cutConnections()
			how = fmt.Sprintf("%d connections cut", n)
		case 6:
			// The agents stop one chain in five, through each instance
			// in turn: one reaches the victim.
			select {
			case <-reached:
			case <-time.After(20 * time.Second):
				how += " (not reached: killed at 20s)"
			}
			f.kill(victim)
			restore()
		}
		halt.Store(true)
		wg.Wait()
		t.Logf("round %d: %s after chain %d", round, how, chains.Load())
		for i := range f.names {
			if f.cmd[i] == nil {
				f.start(i, "")
			}
		}
		f.settle(t, round)
		mu.Lock()
		f.check(t, round, fx, pending, stopped)
		f.checkLedger(t, round, asked, answered)
		mu.Unlock()
		if t.Failed() {
			t.Fatalf("seed %d: stopped after round %d", seed, round)
		}
	}

	// Approved now (again, for those approved under the load: the
	// decision may have been cut off), each waiting call runs once,
	// however often it is repeated, through any instance. One approved
	// under the load whose call a kill cut off after its checkpoint said
	// it runs may have run: it is answered interrupted ever after, and
	// ran at most once (docs/STATE.md, crash points).
	for id, key := range decided {
		pending[id] = key
	}
	cutOff := map[string]bool{}
	for id, key := range pending {
		if status, out := postJSON(t, f.base(rng.IntN(3))+"/v1/approvals/"+id+"/approve", `{"reason":"ok"}`); status != 200 && decided[id] == "" {
			t.Fatalf("approve %s: %d %v", id, status, out)
		}
		for i := range 2 {
			res := call(t, f.base(i), fmt.Sprintf(`{"tool_calls":[{"call_id":"x","tool":"travel__close","idempotency_key":%q,"arguments":{}}]}`, key))
			switch {
			case res.Status == "success":
			case decided[id] != "" && res.Error != nil && res.Error.Code == "interrupted":
				cutOff[id] = true
			default:
				t.Errorf("the approved call %s through %s: %s %+v", key, f.names[i], res.Status, res.Error)
			}
		}
	}
	fx.mu.Lock()
	defer fx.mu.Unlock()
	for id, key := range pending {
		if n := fx.closed[toolKey("travel__close", key)]; n != 1 && !(cutOff[id] && n == 0) {
			t.Errorf("approval %s: its call ran %d times, want once", id, n)
		}
	}
	nAsked, nAnswered := 0, 0
	for req, n := range asked {
		nAsked, nAnswered = nAsked+n, nAnswered+answered[req]
	}
	t.Logf("%d chains, %d stopped, %d approvals (%d of them approved under the load), %d legs undone, %d bookings, %d model turns asked (%d answered)",
		chains.Load(), len(stopped), len(pending), len(decided), len(fx.undone), len(fx.legs), nAsked, nAnswered)
}

// checkLedger checks, once settled, that no model turn holds anything on
// the shared ledger, and that each turn request's ledger counts its
// turns once: no fewer turns and tokens than its answered turns spent
// (fakeModelTokens each), no more than its asked ones could (each its
// answer and a prompt of fewer than 100 tokens).
func (f *pgTrio) checkLedger(t *testing.T, round int, asked, answered map[string]int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var holds int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM holds`).Scan(&holds); err != nil || holds != 0 {
		t.Errorf("round %d: %d holds on the shared ledger once settled (%v); want every turn's let go, or gone with its dead life", round, holds, err)
	}
	st, err := postgres.Open(ctx, f.url, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for req, n := range asked {
		sp, err := st.Spent(ctx, req)
		if err != nil {
			t.Errorf("round %d: the ledger of %s: %v", round, req, err)
			continue
		}
		ok := answered[req]
		if sp.Turns < int64(ok) || sp.Turns > int64(n) || sp.Tokens < int64(ok*fakeModelTokens) || sp.Tokens > int64(n*(fakeModelTokens+100)) {
			t.Errorf("round %d: request %s spent %d turns and %d tokens on the shared ledger, %d turns asked and %d answered; want each answered counted once, nothing counted twice", round, req, sp.Turns, sp.Tokens, n, ok)
		}
	}
}

// cutConnections has the server end every connection of the instances
// (pg_terminate_backend), whatever transaction each is in, and returns
// how many it ended.
func (f *pgTrio) cutConnections() int {
	f.t.Helper()
	conn, err := pgx.Connect(context.Background(), f.url)
	if err != nil {
		f.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// settledOrNot is closed once the store lists no dead life of instance i
// (a recovery forgot it), or a minute has passed.
func (f *pgTrio) settledOrNot(i int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			dead, _, err := f.unsettled()
			if err == nil && !strings.Contains(dead, " "+f.names[i]+"/") {
				return
			}
		}
	}()
	return done
}

// unsettled reads what the store holds that is not settled yet: the
// lives it lists that are not alive (name/owner, each after a space), and
// the requests that have not ended.
func (f *pgTrio) unsettled() (dead string, open []string, err error) {
	ctx := context.Background()
	st, err := postgres.Open(ctx, f.url, &postgres.Options{NoMigrate: true})
	if err != nil {
		return "", nil, err
	}
	defer st.Close()
	lives, err := st.Lives(ctx, 2*time.Second)
	if err != nil {
		return "", nil, err
	}
	for _, l := range lives {
		if !l.Alive {
			dead += " " + l.Name + "/" + l.Owner
		}
	}
	conn, err := pgx.Connect(ctx, f.url)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT id || ' ' || state FROM requests WHERE ended = 0 ORDER BY id`)
	if err != nil {
		return "", nil, err
	}
	open, err = pgx.CollectRows(rows, pgx.RowTo[string])
	return dead, open, err
}

// settle waits until every dead life was recovered (forgotten) and every
// request has ended: its instances left it (idle_gap), or a recovery
// ended it.
func (f *pgTrio) settle(t *testing.T, round int) {
	t.Helper()
	var dead string
	var open []string
	var err error
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if dead, open, err = f.unsettled(); err == nil && dead == "" && len(open) == 0 {
			return
		}
	}
	t.Fatalf("round %d: not settled within 3 minutes: dead lives [%s], requests not ended %v, %v", round, dead, open, err)
}

// check makes the checks of TestCrash25RandomOnInstances once settled.
func (f *pgTrio) check(t *testing.T, round int, fx *sideEffects, pending map[string]string, stopped map[string]bool) {
	t.Helper()
	ctx := context.Background()
	fx.mu.Lock()
	fx.bookedOnce(t, fmt.Sprintf("round %d: ", round))
	for leg, n := range fx.legs {
		if n > 1 {
			t.Errorf("round %d: leg %s booked %d times", round, leg, n)
		}
	}
	for key, n := range fx.unbooked {
		if n > 1 {
			t.Errorf("round %d: undo under key %s ran %d times", round, key, n)
		}
	}
	for key, n := range fx.closed {
		if n > 1 {
			t.Errorf("round %d: the approved call under key %s ran %d times", round, key, n)
		}
	}
	legs, undone := map[string]int{}, map[string]int{}
	for leg, n := range fx.legs {
		legs[leg] = n
	}
	for leg, n := range fx.undone {
		undone[leg] = n
	}
	fx.mu.Unlock()
	st, err := postgres.Open(ctx, f.url, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dead := map[string]bool{}
	dls, err := st.ListDeadLetters(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dls {
		var args struct{ Chain, Step any }
		json.Unmarshal(d.Args, &args)
		dead[fmt.Sprintf("%v/%v", args.Chain, args.Step)] = true
	}
	if _, err := audit.Verify(ctx, st); err != nil {
		t.Errorf("round %d: audit chain: %v", round, err)
	}
	for leg, n := range legs {
		if n == 0 {
			continue
		}
		var c, s int
		fmt.Sscanf(leg, "%d/%d", &c, &s)
		r, err := st.GetRequest(ctx, fmt.Sprintf("chain-%d", c))
		if err != nil {
			t.Errorf("round %d: leg %s booked, its request is not stored: %v", round, leg, err)
			continue
		}
		switch r.State {
		case "ended":
			if undone[leg] != 0 {
				t.Errorf("round %d: leg %s of ended request %s was undone", round, leg, r.ID)
			}
		case "interrupted", "stopped":
			cutOff := false
			var seen []string
			frames, _ := st.RequestFrames(ctx, r.ID)
			for _, fr := range frames {
				if fr.CallID != fmt.Sprintf("s%d", s) {
					continue
				}
				seen = append(seen, fmt.Sprintf("%s %s %s", fr.State, fr.Owner, fr.Error))
				if fr.State == "cancelled" && strings.Contains(string(fr.Error), "interrupted") {
					cutOff = true
				}
			}
			switch {
			case undone[leg] > 1:
				t.Errorf("round %d: leg %s undone %d times", round, leg, undone[leg])
			case undone[leg] == 1, cutOff, dead[leg]:
			default:
				t.Errorf("round %d: leg %s of %s request %s: not undone, not dead-lettered, not cut off (its frames: %q)", round, leg, r.State, r.ID, seen)
			}
		default:
			t.Errorf("round %d: request %s stored %s once settled", round, r.ID, r.State)
		}
	}
	// Every request whose stop was answered stopped is stored stopped;
	// a call naming it, or the newest interrupted ones, is refused on
	// every instance (nothing runs in it again, its budget not spent anew).
	refused := []string{}
	for id := range stopped {
		r, err := st.GetRequest(ctx, id)
		if err != nil || r.State != "stopped" {
			t.Errorf("round %d: request %s, whose stop was answered stopped, is stored %+v, %v", round, id, r, err)
		}
		if len(refused) < 2 {
			refused = append(refused, id)
		}
	}
	rs, err := st.ListRequests(ctx, store.RequestFilter{State: "interrupted", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		refused = append(refused, r.ID)
	}
	for _, id := range refused {
		for i := range f.names {
			// Refused before it runs (409, the request's error) or in its
			// result (the call's error); an instance that has not seen the
			// others since the store came back answers store_unavailable
			// (nothing ran, try again) until it has.
			var status int
			var out map[string]any
			code := "store_unavailable"
			for deadline := time.Now().Add(time.Minute); code == "store_unavailable" && time.Now().Before(deadline); {
				status, out = postJSON(t, f.base(i)+"/v1/calls", fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"again","tool":"travel__book","arguments":{"chain":0,"step":%d}}]}`, id, round))
				e, _ := out["error"].(map[string]any)
				if rs, _ := out["results"].([]any); len(rs) == 1 {
					r, _ := rs[0].(map[string]any)
					e, _ = r["error"].(map[string]any)
				}
				code, _ = e["code"].(string)
				if code == "store_unavailable" {
					time.Sleep(100 * time.Millisecond)
				}
			}
			if !strings.HasPrefix(code, "request_interrupted") && !strings.HasPrefix(code, "stopped") {
				t.Errorf("round %d: a call naming request %s through %s got %d %v; want it refused", round, id, f.names[i], status, out)
			}
		}
	}
	fx.mu.Lock()
	if n := fx.legs[fmt.Sprintf("0/%d", round)]; n != 0 {
		t.Errorf("round %d: the calls naming stopped or interrupted requests booked %d times; want none", round, n)
	}
	fx.mu.Unlock()
	// Every approval pending before the fault is pending still, on
	// every instance.
	for i := range f.names {
		var list struct{ Approvals []struct{ ID, Status string } }
		if status, body := get(t, f.base(i)+"/v1/approvals?status=pending"); status != 200 || json.Unmarshal([]byte(body), &list) != nil {
			t.Fatalf("round %d: approvals on %s: %d %s", round, f.names[i], status, body)
		}
		listed := map[string]bool{}
		for _, a := range list.Approvals {
			listed[a.ID] = true
		}
		for id := range pending {
			if !listed[id] {
				t.Errorf("round %d: approval %s, pending before the fault, is not pending on %s", round, id, f.names[i])
			}
		}
	}
}
