package durable

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// upstream is the system of record: every side effect is a line appended
// (and synced) to a file, with the idempotency key it ran under, so that
// a write executed twice for one key is visible.
type upstream struct {
	mu sync.Mutex
	f  *os.File
}

func (u *upstream) tool(kind string) reach.ToolFunc {
	return func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		key, _ := reach.IdempotencyKey(ctx)
		var a struct{ Chain, Step int }
		json.Unmarshal(args, &a)
		u.mu.Lock()
		fmt.Fprintf(u.f, "%s chain=%d step=%d key=%s\n", kind, a.Chain, a.Step, key)
		u.f.Sync()
		u.mu.Unlock()
		return json.Marshal(map[string]any{"ref": fmt.Sprintf("R-%d-%d", a.Chain, a.Step)})
	}
}

func tools(u *upstream) []reach.Tool {
	return []reach.Tool{
		{Name: "book", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true, Func: u.tool("do"),
			Undo: &reach.Followup{Tool: "unbook", Args: `{"chain": "{args.chain}", "step": "{args.step}", "ref": "{result.ref}"}`}},
		{Name: "unbook", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true, Func: u.tool("undo")},
	}
}

// open builds a durable runtime over the data folder.
func open(t testing.TB, dir string, u *upstream) (*reach.Runtime, *sqlite.Store, *audit.Log) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cp := New(st, nil, nil)
	rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DeadLetters: cp, Recorder: log,
		Idempotency: store.NewIdempotency(st, nil), DefaultBudget: &reach.Budget{}})
	rt.MustRegister(tools(u)...)
	return rt, st, log
}

func upstreamFile(t testing.TB, path string) *upstream {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return &upstream{f: f}
}

// TestCrashChild is the gateway that gets killed: it runs chains of three
// writes, forever, until SIGKILL.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("REACH_CRASH_DIR")
	if dir == "" {
		t.Skip("run by TestCrashRecovery")
	}
	u := upstreamFile(t, filepath.Join(dir, "upstream.log"))
	rt, _, _ := open(t, dir, u)
	for chain := 1; ; chain++ {
		ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: fmt.Sprintf("chain-%d", chain)})
		if err != nil {
			t.Fatal(err)
		}
		for step := 1; step <= 3; step++ {
			rt.Call(ctx, &reach.Call{ID: fmt.Sprint(step), Tool: "book", Arguments: json.RawMessage(fmt.Sprintf(`{"chain":%d,"step":%d}`, chain, step))})
		}
		req.End()
	}
}

// TestCrashRecovery kills a real gateway process at seeded random moments,
// restarts over the same data, and checks: no write ran twice for one
// idempotency key; every started chain either completed or had each of its
// completed writes undone (or dead-lettered), and a write cut off mid-call
// is reported as "may have run"; the audit chain verifies.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(20261130, 7))
	for iter := range 4 {
		dir := t.TempDir()
		cmd := exec.Command(exe, "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "REACH_CRASH_DIR="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Let it work until it has done some writes, then a random while more.
		waitForLines(t, filepath.Join(dir, "upstream.log"), 4)
		time.Sleep(time.Duration(rng.IntN(120)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		u := upstreamFile(t, filepath.Join(dir, "upstream.log"))
		rt, st, log := open(t, dir, u)
		rep, err := Recover(context.Background(), st, rt, nil)
		if err != nil {
			t.Fatal(err)
		}
		// A second restart finds nothing left to do and repeats nothing.
		rep2, err := Recover(context.Background(), st, rt, nil)
		if err != nil || len(rep2.Interrupted) != 0 || len(rep2.MayHaveRun) != 0 {
			t.Fatalf("second recovery did something: %+v %v", rep2, err)
		}
		log.Close()
		vr, err := audit.Verify(context.Background(), st)
		if err != nil {
			t.Fatalf("iteration %d: audit chain: %v", iter, err)
		}
		frames := map[string][]*store.Frame{}
		for _, id := range rep.Interrupted {
			frames[id], _ = st.RequestFrames(context.Background(), id)
		}
		st.Close()
		u.f.Close()
		checkSideEffects(t, iter, filepath.Join(dir, "upstream.log"), rep, frames)
		t.Logf("iteration %d: %d audit events, %d interrupted chains, %d calls may have run", iter, vr.Events, len(rep.Interrupted), len(rep.MayHaveRun))
	}
}

func waitForLines(t *testing.T, path string, n int) {
	for range 2000 {
		b, _ := os.ReadFile(path)
		if strings.Count(string(b), "\n") >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the child never wrote")
}

func checkSideEffects(t *testing.T, iter int, path string, rep *Report, frames map[string][]*store.Frame) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string]int{}
	done := map[string]bool{}   // "chain/step" written
	undone := map[string]bool{} // "chain/step" undone
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kind, key string
		var chain, step int
		if _, err := fmt.Sscanf(sc.Text(), "%s chain=%d step=%d key=%s", &kind, &chain, &step, &key); err != nil {
			t.Fatalf("iteration %d: bad line %q", iter, sc.Text())
		}
		if keys[kind+key]++; keys[kind+key] > 1 {
			t.Errorf("iteration %d: %s ran twice under key %s", iter, kind, key)
		}
		id := fmt.Sprintf("%d/%d", chain, step)
		if kind == "do" {
			done[id] = true
		} else {
			undone[id] = true
		}
	}
	mayHaveRun := map[string]bool{}
	for _, fr := range rep.MayHaveRun {
		var a struct{ Chain, Step int }
		json.Unmarshal(fr.Args, &a)
		mayHaveRun[fmt.Sprintf("%d/%d", a.Chain, a.Step)] = true
	}
	interrupted := map[int]bool{}
	for _, id := range rep.Interrupted {
		var c int
		fmt.Sscanf(id, "chain-%d", &c)
		interrupted[c] = true
		for _, fr := range frames[id] {
			var a struct{ Chain, Step int }
			json.Unmarshal(fr.Args, &a)
			if fr.State == "completed" && !undone[fmt.Sprintf("%d/%d", a.Chain, a.Step)] {
				t.Errorf("iteration %d: %s step %d completed but was not undone", iter, id, a.Step)
			}
		}
	}
	// Every write that ran belongs to a chain that completed (all three
	// steps) or was interrupted; in an interrupted chain it was undone, or
	// its call was cut off and reported as "may have run".
	for id := range done {
		var chain, step int
		fmt.Sscanf(id, "%d/%d", &chain, &step)
		if !interrupted[chain] {
			if !done[fmt.Sprintf("%d/3", chain)] {
				t.Errorf("iteration %d: chain %d neither completed nor was interrupted", iter, chain)
			}
			continue
		}
		if !undone[id] && !mayHaveRun[id] {
			t.Errorf("iteration %d: write %s of an interrupted chain was neither undone nor reported", iter, id)
		}
	}
}
