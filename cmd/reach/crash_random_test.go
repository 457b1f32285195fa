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

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// failsUndo reports whether the undo of a leg always fails (it is then
// dead-lettered).
func failsUndo(chain, step int) bool { return (chain+step)%5 == 0 }

// stops reports whether chain is stopped rather than ended: one in five,
// whose third leg's undo fails.
func stops(chain int64) bool { return chain%5 == 2 }

// randomPoints are the crash points (docs/STATE.md) that
// TestCrashAtRandomPoints arms, each with the most times N it picks for
// "NAME#N": those its run reaches, at a rate the bound fits. A point not
// reached is a kill at a moment, later.
var randomPoints = []struct {
	name string
	most int
}{
	{"request.begun", 20}, {"claimed", 40}, {"executing", 40}, {"ended", 40}, {"commit", 60},
	{"request.stopped", 4}, {"request.ended", 20}, {"deadletter.added", 2}, {"approval.pending", 3},
	{"audit.appended", 30}, {"recovery.undone", 3}, {"recovery.interrupted", 2}, {"recovery.stopped", 1}, {"undo.ended", 4},
}

// TestCrashAtRandomPoints kills a real `reach serve` (kill -9) at random
// points of a write-heavy run, many times over the same data: at a random
// moment, or at the Nth time (N random) it reaches a crash point picked
// at random among randomPoints (docs/STATE.md's, those this run reaches).
// Agents run chains of three bookings (each with an undo; some undos
// always fail) in requests of their own, ending each, or stopping it
// (its undos run, a failed one is dead-lettered), and now and then a
// high-risk call that waits for approval. After each restart:
//
//   - no write was applied twice: no booking, and no undo, ran twice for
//     one idempotency key, nor twice for one leg;
//   - every leg booked by a request the restart interrupted, or that was
//     stopped, was undone once, or its undo is an open dead letter (it
//     failed, or a kill cut it off, in a recovery say), or the kill cut
//     the booking off (its checkpoint says it may have run); no leg of an
//     ended request was undone;
//   - the audit chain verifies;
//   - every approval that was pending is still pending;
//   - no budget is given back: a request of a dead life that did not end
//     refuses a call that names it (its budget is not spent anew).
//
// At the end the approvals are approved, and each call, repeated with its
// idempotency key, runs once. The seed is logged; REACH_CRASH_SEED runs
// one again, and REACH_CRASH_ROUNDS (default 12) sets how many kills.
func TestCrashAtRandomPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	fx := newSideEffects(failsUndo)
	cfg := travelConfig(t, sideEffectsUpstream(t, fx), `  travel__close: {access: high_risk}
budgets:
  default: {tool_calls: 1000, wall: 10m}
`)
	data, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("REACH_CRASH_SEED"); v != "" {
		if _, err := fmt.Sscan(v, &seed); err != nil {
			t.Fatalf("REACH_CRASH_SEED=%q: %v", v, err)
		}
	}
	rounds := 12
	if v := os.Getenv("REACH_CRASH_ROUNDS"); v != "" {
		if _, err := fmt.Sscan(v, &rounds); err != nil || rounds < 1 {
			t.Fatalf("REACH_CRASH_ROUNDS=%q: want a count", v)
		}
	}
	t.Logf("seed %d (REACH_CRASH_SEED), %d rounds", seed, rounds)
	rng := rand.New(rand.NewPCG(seed, 16))
	var chains atomic.Int64
	pending := map[string]string{} // approval id -> the idempotency key of its call
	var pendMu sync.Mutex
	aprID := regexp.MustCompile(`apr_[0-9a-f]+`)
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(path, body string) (*http.Response, error) {
		return client.Post(base+path, "application/json", strings.NewReader(body))
	}
	// agent runs chains until the gateway dies.
	agent := func() {
		for {
			c := chains.Add(1)
			req := fmt.Sprintf("chain-%d", c)
			for step := 1; step <= 3; step++ {
				resp, err := post("/v1/calls", fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"s%d","tool":"travel__book","arguments":{"chain":%d,"step":%d}}]}`,
					req, step, c, step))
				if err != nil {
					return
				}
				resp.Body.Close()
			}
			if stops(c) {
				// Stopped instead of ended: its undos run (leg 3's fails,
				// and is dead-lettered).
				resp, err := post("/v1/requests/"+req+"/cancel", `{"reason":"enough"}`)
				if err != nil {
					return
				}
				resp.Body.Close()
				continue
			}
			if c%4 == 0 {
				key := fmt.Sprintf("close-%d", c)
				resp, err := post("/v1/calls", fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"x","tool":"travel__close","idempotency_key":%q,"arguments":{}}]}`, req, key))
				if err != nil {
					return
				}
				var out struct{ Results []callResult }
				json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if len(out.Results) == 1 && out.Results[0].Status == "pending" && out.Results[0].Error != nil {
					if id := aprID.FindString(out.Results[0].Error.Message); id != "" {
						pendMu.Lock()
						pending[id] = key
						pendMu.Unlock()
					}
				}
			}
			resp, err := post("/v1/requests/"+req+"/end", "")
			if err != nil {
				return
			}
			resp.Body.Close()
		}
	}
	var cmd *exec.Cmd
	for round := range rounds {
		how := "a random moment"
		var reached <-chan struct{}
		if rng.IntN(2) == 0 {
			cmd = startReach(t, cfg, addr, data)
			killAtEnd(t, cmd)
		} else {
			p := randomPoints[rng.IntN(len(randomPoints))]
			how = fmt.Sprintf("%s#%d", p.name, 1+rng.IntN(p.most))
			cmd, reached = startReachAt(t, cfg, addr, data, how)
		}
		if reached != nil {
			select {
			case <-reached: // in the recovery, before it served
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
				t.Logf("round %d: killed at %s, while it recovered", round, how)
				continue
			default:
			}
		}
		if round > 0 {
			checkAfterRestart(t, round, base, data, fx, pending, &pendMu)
		}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(agent)
		}
		if reached != nil {
			select {
			case <-reached:
			case <-time.After(5 * time.Second):
				how += " (not reached: killed at 5s)"
			}
		} else {
			time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		wg.Wait()
		t.Logf("round %d: killed at %s after chain %d", round, how, chains.Load())
	}
	cmd = startReach(t, cfg, addr, data)
	killAtEnd(t, cmd)
	defer func() { stopServe(t, cmd, os.Interrupt) }()
	checkAfterRestart(t, rounds, base, data, fx, pending, &pendMu)

	// Approved now, each waiting call runs once, however often it is repeated.
	for id, key := range pending {
		if status, out := postJSON(t, base+"/v1/approvals/"+id+"/approve", `{"reason":"ok"}`); status != 200 {
			t.Fatalf("approve %s: %d %v", id, status, out)
		}
		for range 2 {
			if res := call(t, base, fmt.Sprintf(`{"tool_calls":[{"call_id":"x","tool":"travel__close","idempotency_key":%q,"arguments":{}}]}`, key)); res.Status != "success" {
				t.Errorf("the approved call %s: %+v", key, res)
			}
		}
	}
	fx.mu.Lock()
	defer fx.mu.Unlock()
	for id, key := range pending {
		if n := fx.closed[toolKey("travel__close", key)]; n != 1 {
			t.Errorf("approval %s: its call ran %d times, want once", id, n)
		}
	}
	t.Logf("%d chains, %d approvals kept pending across the restarts, %d legs undone, %d bookings",
		chains.Load(), len(pending), len(fx.undone), len(fx.legs))
}

// checkAfterRestart checks what TestCrashAtRandomPoints holds after each
// restart.
func checkAfterRestart(t *testing.T, round int, base, data string, fx *sideEffects, pending map[string]string, pendMu *sync.Mutex) {
	t.Helper()
	fx.mu.Lock()
	defer fx.mu.Unlock()
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
	// The dead letters the gateway shows.
	dead := map[string]bool{}
	var dl struct {
		Deadletters []struct {
			Args struct{ Chain, Step any } `json:"arguments"`
		}
	}
	if status, body := get(t, base+"/v1/deadletters"); status != 200 || json.Unmarshal([]byte(body), &dl) != nil {
		t.Fatalf("round %d: dead letters: %d %s", round, status, body)
	}
	for _, d := range dl.Deadletters {
		dead[fmt.Sprintf("%v/%v", d.Args.Chain, d.Args.Step)] = true
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, data, &sqlite.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := audit.Verify(ctx, st); err != nil {
		t.Errorf("round %d: audit chain: %v", round, err)
	}
	for leg, n := range fx.legs {
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
			if fx.undone[leg] != 0 {
				t.Errorf("round %d: leg %s of an ended request was undone", round, leg)
			}
		case "interrupted", "stopped":
			cutOff := false
			frames, _ := st.RequestFrames(ctx, r.ID)
			for _, f := range frames {
				if f.CallID == fmt.Sprintf("s%d", s) && f.State == "cancelled" && strings.Contains(string(f.Error), "interrupted") {
					cutOff = true
				}
			}
			switch {
			case fx.undone[leg] > 1:
				t.Errorf("round %d: leg %s undone %d times", round, leg, fx.undone[leg])
			case fx.undone[leg] == 1, cutOff:
			case dead[leg]: // its undo failed, or a kill cut it off (in a recovery, say)
			default:
				t.Errorf("round %d: leg %s of interrupted request %s: not undone, not dead-lettered, not cut off", round, leg, r.ID)
			}
		case "running":
			t.Errorf("round %d: request %s still running after the restart", round, r.ID)
		}
	}
	// No request of a dead life gets its budget back: one that did not
	// end refuses a call that names it (the newest few, each a booking
	// that would run if it were let through).
	var unended []string
	for _, state := range []string{"interrupted", "stopped"} {
		rs, err := st.ListRequests(ctx, store.RequestFilter{State: state, Limit: 2})
		if err != nil {
			t.Fatalf("round %d: listing the %s requests: %v", round, state, err)
		}
		for _, r := range rs {
			unended = append(unended, r.ID)
		}
	}
	for _, id := range unended {
		fx.mu.Unlock()
		res := call(t, base, fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"again","tool":"travel__book","arguments":{"chain":0,"step":%d}}]}`, id, round))
		fx.mu.Lock()
		if res.Status == "success" || res.Error == nil || !strings.HasPrefix(res.Error.Code, "request_interrupted") && !strings.HasPrefix(res.Error.Code, "stopped") {
			t.Errorf("round %d: a call naming request %s (%s after the restart) got %+v; want it refused", round, id, "not ended", res)
		}
	}
	// Every approval pending before the kill is pending still.
	var list struct{ Approvals []struct{ ID, Status string } }
	if status, body := get(t, base+"/v1/approvals?status=pending"); status != 200 || json.Unmarshal([]byte(body), &list) != nil {
		t.Fatalf("round %d: approvals: %d %s", round, status, body)
	}
	listed := map[string]bool{}
	for _, a := range list.Approvals {
		listed[a.ID] = true
	}
	pendMu.Lock()
	defer pendMu.Unlock()
	for id := range pending {
		if !listed[id] {
			t.Errorf("round %d: approval %s, pending before the kill, is not pending after the restart", round, id)
		}
	}
}

// postJSON posts body to u and decodes the answer.
func postJSON(t *testing.T, u, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}
