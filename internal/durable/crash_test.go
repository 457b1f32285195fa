package durable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
	// torn is the line the file ended with, unended, when it was opened:
	// a write a kill cut off while the tool wrote it. A line is one
	// write(2), but Linux copies a write into a file a page at a time and
	// stops between pages for SIGKILL, so that a line across a page's end
	// can be left half written.
	torn   string
	tornAt int // where the torn line begins in the file
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

// upstreamFile opens the upstream's file at path to append to it. A line
// a kill tore (upstream.torn) is ended first, so that the next write is a
// line of its own rather than the torn line's end.
func upstreamFile(t testing.TB, path string) *upstream {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{f: f}
	if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
		u.torn, u.tornAt = string(b[i+1:]), i+1
		if _, err := f.WriteString("\n"); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// TestCrashChild is the gateway that gets killed: it runs chains of three
// writes, forever, until SIGKILL.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("REACH_CRASH_DIR")
	if dir == "" {
		t.Skip("run by TestCrashRecovery")
	}
	// A test that ends without killing it (its time ran out) does not
	// leave it running: it stops once its parent is gone.
	parent := os.Getppid()
	go func() {
		for os.Getppid() == parent {
			time.Sleep(50 * time.Millisecond)
		}
		os.Exit(2)
	}()
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
// is reported as "may have run"; the audit chain verifies. A failure says
// what recovery saw (crashSeen).
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	rng := rand.New(rand.NewPCG(20261130, 7))
	for iter := range 4 {
		crashOnce(t, iter, time.Duration(rng.IntN(120))*time.Millisecond)
	}
}

// TestCrashRecoverySweep is TestCrashRecovery over many kill moments:
// REACH_CRASH_SWEEP iterations (none if unset), each killing the child
// 0 to 119 ms after its fourth write, in turn.
func TestCrashRecoverySweep(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("REACH_CRASH_SWEEP"))
	if n <= 0 {
		t.Skip("set REACH_CRASH_SWEEP to the number of kills")
	}
	for iter := range n {
		crashOnce(t, iter, time.Duration(iter%120)*time.Millisecond)
		if t.Failed() {
			return
		}
	}
}

// crashOnce runs a child gateway (TestCrashChild) until it has written
// four times, kills it delay after, recovers over its data and checks
// what recovery did (sideEffectProblems).
func crashOnce(t *testing.T, iter int, delay time.Duration) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	defer os.RemoveAll(dir) // a sweep keeps one data folder at a time, not all of them
	cmd := exec.Command(exe, "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "REACH_CRASH_DIR="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Let it work until it has done some writes, then a while more.
	wrote := waitForLines(filepath.Join(dir, "upstream.log"), 4, exited)
	if wrote {
		time.Sleep(delay)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	if err := <-exited; !wrote {
		t.Fatalf("iteration %d: the child ended (%v) before it wrote four times:\n%s", iter, err, out.Bytes())
	}

	ctx := context.Background()
	u := upstreamFile(t, filepath.Join(dir, "upstream.log"))
	rt, st, log := open(t, dir, u)
	// What the kill left, before recovery changes it.
	seen := &crashSeen{before: map[string][]*store.Frame{}, after: map[string][]*store.Frame{}}
	reqs, _ := st.ListRequests(ctx, store.RequestFilter{Limit: 100000})
	for _, r := range reqs {
		seen.requests = append(seen.requests, r.ID+" "+r.State)
		if r.State != "ended" {
			seen.before[r.ID], _ = st.RequestFrames(ctx, r.ID)
		}
	}
	rep, err := Recover(ctx, st, rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A second restart finds nothing left to do and repeats nothing.
	rep2, err := Recover(ctx, st, rt, nil)
	if err != nil || len(rep2.Interrupted) != 0 || len(rep2.MayHaveRun) != 0 {
		t.Fatalf("iteration %d: second recovery did something: %+v %v", iter, rep2, err)
	}
	log.Close()
	vr, err := audit.Verify(ctx, st)
	if err != nil {
		t.Fatalf("iteration %d: audit chain: %v", iter, err)
	}
	for _, id := range rep.Interrupted {
		seen.after[id], _ = st.RequestFrames(ctx, id)
	}
	seen.dead, _ = st.ListDeadLetters(ctx, "")
	st.Close()
	u.f.Close()
	seen.upstream, _ = os.ReadFile(filepath.Join(dir, "upstream.log"))
	seen.torn, seen.tornAt = u.torn, u.tornAt
	problems := sideEffectProblems(seen.upstream, u.torn, rep, seen.after)
	for _, p := range problems {
		t.Errorf("iteration %d: %s", iter, p)
	}
	if len(problems) > 0 {
		t.Logf("iteration %d (killed %v after the fourth write): what recovery saw\n%s", iter, delay, seen.String(rep))
	}
	t.Logf("iteration %d: %d audit events, %d interrupted chains, %d calls may have run", iter, vr.Events, len(rep.Interrupted), len(rep.MayHaveRun))
	if u.torn != "" {
		t.Logf("iteration %d: the kill tore the upstream's line at byte %d: %q", iter, u.tornAt, u.torn)
	}
}

// crashSeen is what a crash left and what recovery made of it, told when
// a check fails.
type crashSeen struct {
	requests      []string                  // every stored request, with its state, before recovery
	before, after map[string][]*store.Frame // the frames of each request not ended, before and after
	dead          []*store.DeadLetter
	upstream      []byte
	torn          string // its line the kill tore (upstream.torn), at byte tornAt
	tornAt        int
}

func (s *crashSeen) String(rep *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "requests before recovery: %v\n", s.requests)
	frames := func(what string, m map[string][]*store.Frame) {
		for id, list := range m {
			fmt.Fprintf(&b, "frames of %s %s:\n", id, what)
			for _, f := range list {
				fmt.Fprintf(&b, "  %s %s call %s state %s key %q args %s undo %s error %s\n", f.Frame, f.Name, f.CallID, f.State, f.IdemKey, f.Args, f.Undo, f.Error)
			}
		}
	}
	frames("before recovery", s.before)
	frames("after recovery", s.after)
	fmt.Fprintf(&b, "report: interrupted %v, stopped %v, unreadable %+v\n", rep.Interrupted, rep.Stopped, rep.Unreadable)
	for _, f := range rep.MayHaveRun {
		fmt.Fprintf(&b, "  may have run: %s %s %s\n", f.Request, f.Name, f.Args)
	}
	for _, c := range rep.Claims {
		fmt.Fprintf(&b, "  claim settled: %q of %s frame %s: %s\n", c.Claim.Key, c.Claim.Request, c.Claim.Frame, c.Outcome)
	}
	for id, cs := range rep.Compensated {
		for _, c := range cs {
			fmt.Fprintf(&b, "  compensated %s: %+v\n", id, c)
		}
	}
	for _, d := range s.dead {
		fmt.Fprintf(&b, "  dead letter: %+v\n", *d)
	}
	if s.torn != "" {
		fmt.Fprintf(&b, "the kill tore the upstream's last line, bytes %d to %d of the file: %q\n", s.tornAt, s.tornAt+len(s.torn), s.torn)
	}
	up := s.upstream
	if i := len(up) - 600; i > 0 {
		up = up[i:]
	}
	fmt.Fprintf(&b, "upstream (its end):\n%s", up)
	return b.String()
}

// waitForLines waits until the file at path has n lines, and reports
// whether it had them before the child ended (exited; its outcome is put
// back).
func waitForLines(path string, n int, exited chan error) bool {
	for {
		b, _ := os.ReadFile(path)
		if bytes.Count(b, []byte("\n")) >= n {
			return true
		}
		select {
		case err := <-exited:
			exited <- err
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// upstreamLine is a line of the upstream's file: kind "do" (book) or
// "undo" (unbook).
const upstreamLine = "%s chain=%d step=%d key=%s"

// toolKind is the kind of line each tool writes.
var toolKind = map[string]string{"book": "do", "unbook": "undo"}

// sideEffectProblems checks the upstream's file, log, against what
// recovery reported (rep, and frames, the interrupted requests'
// checkpoints after it), and returns what is wrong. torn is the line the
// kill tore (upstream.torn): the tool that wrote it never returned, so its
// call must be reported as one that may have run.
func sideEffectProblems(log []byte, torn string, rep *Report, frames map[string][]*store.Frame) []string {
	var problems []string
	problemf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	keys := map[string]int{}
	done := map[string]bool{}   // "chain/step" written
	undone := map[string]bool{} // "chain/step" undone
	tornSeen := false
	for _, line := range strings.Split(strings.TrimSuffix(string(log), "\n"), "\n") {
		if line == "" {
			continue
		}
		if torn != "" && line == torn && !tornSeen {
			tornSeen = true // checked below
			continue
		}
		var kind, key string
		var chain, step int
		// The whole line, and nothing else (a line glued to a torn one is
		// not read as that one).
		if _, err := fmt.Sscanf(line, upstreamLine, &kind, &chain, &step, &key); err != nil ||
			fmt.Sprintf(upstreamLine, kind, chain, step, key) != line || (kind != "do" && kind != "undo") {
			problemf("bad line %q", line)
			continue
		}
		if keys[kind+key]++; keys[kind+key] > 1 {
			problemf("%s ran twice under key %s", kind, key)
		}
		id := fmt.Sprintf("%d/%d", chain, step)
		if kind == "do" {
			done[id] = true
		} else {
			undone[id] = true
		}
	}
	mayHaveRun := map[string]bool{}
	tornReported := false
	for _, fr := range rep.MayHaveRun {
		var a struct{ Chain, Step int }
		json.Unmarshal(fr.Args, &a)
		mayHaveRun[fmt.Sprintf("%d/%d", a.Chain, a.Step)] = true
		// The torn line is the start of the line this call's tool wrote.
		if whole := fmt.Sprintf(upstreamLine, toolKind[fr.Name], a.Chain, a.Step, ""); torn != "" &&
			(strings.HasPrefix(whole, torn) || strings.HasPrefix(torn, whole)) {
			tornReported = true
		}
	}
	if torn != "" && !tornReported {
		problemf("the write the kill tore (%q) is not among the calls that may have run", torn)
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
				problemf("%s step %d completed but was not undone", id, a.Step)
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
				problemf("chain %d neither completed nor was interrupted", chain)
			}
			continue
		}
		if !undone[id] && !mayHaveRun[id] {
			problemf("write %s of an interrupted chain was neither undone nor reported", id)
		}
	}
	slices.Sort(problems)
	return problems
}
