package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// TestCrashAtDurablePoints kills a real `reach serve` (kill -9) at each
// durable point of a write, exactly there (crashpoint), and restarts it over
// the same data. The request "trip" books leg 1 (key k1), then dies during
// leg 2 (key k2): once its idempotency claim is durable (with its
// "executing" checkpoint, one write), once the "executing" checkpoint is,
// or between the "ended" checkpoint and the claim's completion. After the restart:
//
//   - no claim blocks a retry: a retry of leg 2 (same key, same arguments,
//     a new request) answers, and the store keeps no claim;
//   - no completed write is repeated: leg 2 runs again only if it never
//     started; otherwise the retry gets an error saying what happened;
//   - the interrupted request is not continued nor reported completed: a
//     call naming it is refused (request_interrupted), and ending it
//     answers "interrupted";
//   - leg 1, undone by the restart, answers its retry with "undone";
//   - the audit chain verifies.
func TestCrashAtDurablePoints(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	for _, tc := range []callPoint{
		// The claim commits with the "executing" checkpoint, in one write
		// (docs/STATE.md): once it is durable the call may have run.
		{"claimed#2", "interrupted", 0, 0},
		{"executing#2", "interrupted", 0, 0}, // it may have run: nothing runs it again
		{"ended#2", "undone", 1, 1},          // it ran, and the restart undid it with its request
		// The connection to the upstream ready, not a byte of the call
		// written: the "executing" checkpoint is durable, so the retry is
		// answered as at executing, and the upstream never saw the call.
		// Only a tools/call on an upstream's wire reaches the point (not
		// its start-up: initialize, tools/list go through the SDK), and
		// leg 1 is the one before: #2 is leg 2 whatever the start did.
		{"wire.ready#2", "interrupted", 0, 0},
	} {
		t.Run(strings.TrimSuffix(tc.point, "#2"), func(t *testing.T) { crashAtCallPoint(t, "", tc) })
	}
}

// TestKill30CallPointsOnPostgres is TestCrashAtDurablePoints over
// PostgreSQL (one instance, restarted under its name, instance_ttl 5s, storeHead):
// the killed life's work is recovered once its heartbeat is older than
// the TTL, and the checks wait for that. There a call's claim commits
// before its checkpoint (docs/STATE.md, row "1 and 2"): a kill at the
// claim leaves no checkpoint, the call never sent, and its retry runs it.
func TestKill30CallPointsOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	pg := pgtest.Own(t)
	for n, tc := range []callPoint{
		{"claimed#2", "", 1, 0}, // no checkpoint yet: it never ran, and the retry runs it
		{"executing#2", "interrupted", 0, 0},
		{"ended#2", "undone", 1, 1},
		{"wire.ready#2", "interrupted", 0, 0}, // the claim and checkpoint committed, the call not sent
	} {
		t.Run(strings.TrimSuffix(tc.point, "#2"), func(t *testing.T) {
			url, err := pg.CreateDatabase(t.Context(), fmt.Sprint("callpoint", n))
			if err != nil {
				t.Fatal(err)
			}
			crashAtCallPoint(t, url, tc)
		})
	}
}

// callPoint is a case of TestCrashAtDurablePoints.
type callPoint struct {
	point  string // where the gateway dies, during leg 2
	retry  string // the error code a retry of leg 2 gets; "" if it runs
	booked int    // how many times leg 2 ran, in all
	undone int    // how many times leg 2 was undone
}

// crashAtCallPoint is a case of TestCrashAtDurablePoints over the
// PostgreSQL database url, or SQLite if "".
func crashAtCallPoint(t *testing.T, url string, tc callPoint) {
	l := newSideEffects(nil)
	cfg := writeConfig(t, storeHead(url)+travelYAML(sideEffectsUpstream(t, l), ""))
	data, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	book := func(request, key string, step int) string {
		rid := ""
		if request != "" {
			rid = `"request_id":"` + request + `",`
		}
		return fmt.Sprintf(`{%s"tool_calls":[{"call_id":"leg%d","tool":"travel__book","idempotency_key":"%s","arguments":{"chain":1,"step":%d}}]}`,
			rid, step, key, step)
	}

	cmd, reached := startReachAt(t, cfg, addr, data, tc.point)
	if res := call(t, base, book("trip", "k1", 1)); res.Status != "success" {
		t.Fatalf("leg 1: %+v", res)
	}
	go http.Post(base+"/v1/calls", "application/json", strings.NewReader(book("trip", "k2", 2))) // cut off by the kill
	select {
	case <-reached:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the gateway never reached crash point %s", tc.point)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	cmd = startReach(t, cfg, addr, data)
	defer func() {
		stopServe(t, cmd, os.Interrupt)
	}()
	if url != "" { // the killed life is recovered once it is instance_ttl old
		(&crashRun{store: url}).recovered(t)
	}
	// The interrupted request stays so.
	if res := call(t, base, book("trip", "k3", 3)); res.Status != "refused" || res.Error.Code != "request_interrupted" ||
		!strings.Contains(res.Error.Suggestion, "new request") {
		t.Errorf("a call in the interrupted request got %+v; want it refused as request_interrupted", res)
	}
	if end := getJSON(t, "POST", base+"/v1/requests/trip/end", ""); end["state"] != "interrupted" {
		t.Errorf("ending the interrupted request answers %v; want state interrupted", end)
	}
	// No claim blocks a retry; no completed write runs again.
	res := call(t, base, book("", "k2", 2))
	switch {
	case tc.retry == "" && (res.Status != "success" || res.Replayed):
		t.Errorf("the retry of leg 2 got %+v; want it to run (it never started)", res)
	case tc.retry != "" && (res.Error == nil || res.Error.Code != tc.retry || res.Error.Suggestion == ""):
		t.Errorf("the retry of leg 2 got %+v; want the error %s, with a suggestion", res, tc.retry)
	}
	if res := call(t, base, book("", "k1", 1)); res.Error == nil || res.Error.Code != "undone" {
		t.Errorf("the retry of leg 1 got %+v; want the error undone (the restart undid it)", res)
	}
	if res := call(t, base, strings.Replace(book("", "k1", 1), `"step":1`, `"step":5`, 1)); res.Error == nil ||
		res.Error.Code != "idempotency_key_reused" {
		t.Errorf("key k1 with other arguments got %+v; want idempotency_key_reused", res)
	}
	stopServe(t, cmd, os.Interrupt)

	l.mu.Lock()
	defer l.mu.Unlock()
	l.bookedOnce(t, "")
	if n := l.booked[toolKey("travel__book", "k2")]; n != tc.booked {
		t.Errorf("leg 2 ran %d times, want %d", n, tc.booked)
	}
	if l.booked[toolKey("travel__book", "k1")] != 1 || l.undone["1/1"] != 1 {
		t.Errorf("leg 1 ran %d times and was undone %d times, want 1 and 1", l.booked[toolKey("travel__book", "k1")], l.undone["1/1"])
	}
	if l.undone["1/2"] != tc.undone || l.legs["1/3"] > 0 {
		t.Errorf("leg 2 undone %d times (want %d); leg 3 booked %d times (want 0)", l.undone["1/2"], tc.undone, l.legs["1/3"])
	}
	ctx := context.Background()
	where := []string{"--data", data}
	var st interface {
		ClaimedKeys(ctx context.Context) ([]*store.IdemRecord, error)
		GetRequest(ctx context.Context, id string) (*store.Request, error)
		Close() error
	}
	var err error
	if url != "" {
		where = []string{"--store", url}
		st, err = postgres.Open(ctx, url, &postgres.Options{NoMigrate: true})
	} else {
		st, err = sqlite.Open(ctx, data, &sqlite.Options{NoCreate: true})
	}
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if claims, err := st.ClaimedKeys(ctx); err != nil || len(claims) != 0 {
		t.Errorf("claims left in the store: %v (%v)", claims, err)
	}
	if r, err := st.GetRequest(ctx, "trip"); err != nil || r.State != "interrupted" || !strings.Contains(string(r.Cause), "restarted") {
		t.Errorf("the stored request: %+v (%v); want it interrupted, with its cause", r, err)
	}
	if out, errOut, err := runCmd(t, newAudit, append([]string{"verify"}, where...)...); err != nil || !strings.Contains(out, "chain ok") {
		t.Errorf("reach audit verify: %v\n%s%s", err, out, errOut)
	}
}

// startReachAt is startReach with the crash point armed; the channel is
// closed when the gateway stops there.
func startReachAt(t *testing.T, cfg, addr, data, point string) (*exec.Cmd, <-chan struct{}) {
	cmd := serveCmd(t, cfg, addr, data, crashpoint.Env+"="+point)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	reached := make(chan struct{})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The armed life's log, shown if the test fails (a point never
	// reached: what the life did instead).
	var (
		mu   sync.Mutex
		seen strings.Builder
	)
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			mu.Lock()
			b := seen.String()
			mu.Unlock()
			if len(b) > 6000 {
				b = b[len(b)-6000:]
			}
			t.Logf("the log of reach serve armed at %s:\n%s", point, b)
		}
	})
	go func() {
		buf := make([]byte, 4096)
		closed := false
		for {
			n, err := stderr.Read(buf)
			mu.Lock()
			seen.Write(buf[:n])
			hit := !closed && strings.Contains(seen.String(), "reach: crash point "+point)
			mu.Unlock()
			if hit {
				closed = true
				close(reached)
			}
			if err != nil {
				return
			}
		}
	}()
	// The point may be reached before the gateway serves (by the undos
	// its recovery runs): then it never answers. A start may take
	// seconds before it serves: on PostgreSQL, right after a kill -9 of
	// the same instance, it asks for its name for up to ConnectTimeout
	// (5 s) until the server has ended the killed process's backend. It
	// is given a minute, not the 500 looks (5 s) such a start outlasted.
	c := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case <-reached:
			return cmd, reached
		default:
		}
		if resp, err := c.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return cmd, reached
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatalf("reach serve did not start: %v", cmd.ProcessState)
	return nil, nil
}

// callResult is one result of POST /v1/calls.
type callResult struct {
	Status   string `json:"status"`
	Replayed bool   `json:"replayed"`
	Error    *struct {
		Code       string `json:"code"`
		Message    string `json:"message"`
		Suggestion string `json:"suggestion"`
	} `json:"error"`
}

// call posts an envelope of one call and returns its result. A gateway
// that does not answer within a minute is waiting for something that
// will not come (a claim nobody holds): the test fails.
func call(t *testing.T, base, envelope string) callResult {
	t.Helper()
	c := &http.Client{Timeout: time.Minute}
	resp, err := c.Post(base+"/v1/calls", "application/json", strings.NewReader(envelope))
	if err != nil {
		t.Fatalf("POST /v1/calls %s: %v", envelope, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out struct {
		Results []callResult `json:"results"`
	}
	if err := json.Unmarshal(data, &out); err != nil || len(out.Results) != 1 {
		t.Fatalf("POST /v1/calls %s: %d %s", envelope, resp.StatusCode, data)
	}
	return out.Results[0]
}
