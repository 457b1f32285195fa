package servebench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Where a served call waits, one at a time: with REACH_BENCH_TRACE naming
// a folder (and REACH_BENCH_PPROF=1, so that reach serves its execution
// trace), BenchmarkServedLatency takes an execution trace of every reach
// child and of the benchmark's own process (the clients) over the same
// seconds of its timed loop, and TestWaitAccount, run with
// REACH_BENCH_ACCOUNT naming that folder, lays each call's wall time out
// in stages, across the two processes: both traces are stamped with the
// machine's monotonic clock.
//
//	REACH_BENCH_PPROF=1 REACH_BENCH_TRACE="$DIR" REACH_BENCH_PATHS=reach-write,reach-read \
//	  go test -run '^$' -bench ServedLatency -benchtime 1000x ./internal/servebench/
//	REACH_BENCH_ACCOUNT="$DIR" go test -run TestWaitAccount -v ./internal/servebench/

// traceSeconds is how long the traces run, from the end of the warm-up.
const traceSeconds = 2

// startTraces begins the traces of REACH_BENCH_TRACE, if it names a folder:
// reach's, one a process serving pprof (fetched meanwhile), and this
// process's. The function it returns waits for them to end.
func startTraces(b *testing.B, paths []*path) (wait func()) {
	dir := os.Getenv("REACH_BENCH_TRACE")
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	errs := make(chan error, len(paths)+1)
	n := 0
	seen := map[string]bool{}
	for _, g := range cpuGroups(paths) {
		p := paths[slices.IndexFunc(paths, func(p *path) bool { return p.pid == g.pid })]
		if p.pprof == "" || seen[p.pprof] {
			continue
		}
		seen[p.pprof] = true
		n++
		go func() { errs <- fetchTrace(p.pprof, filepath.Join(dir, g.name+".trace")) }()
	}
	n++
	go func() { errs <- traceSelf(filepath.Join(dir, "client.trace")) }()
	return func() {
		for range n {
			if err := <-errs; err != nil {
				b.Errorf("tracing: %v", err)
			}
		}
	}
}

// fetchTrace writes to file the execution trace that the pprof server at
// base takes for traceSeconds.
func fetchTrace(base, file string) error {
	resp, err := httpClient.Get(base + "/debug/pprof/trace?seconds=" + strconv.Itoa(traceSeconds))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %s", base, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// traceSelf writes this process's execution trace of the next
// traceSeconds to file.
func traceSelf(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return err
	}
	time.Sleep(traceSeconds * time.Second)
	trace.Stop()
	return f.Close()
}

// TestWaitAccount prints, for the traces in the folder REACH_BENCH_ACCOUNT
// names (see startTraces), each served call's stages by kind (a write:
// its claim committed SQLite's C on the way; a read), in medians and
// quartiles.
func TestWaitAccount(t *testing.T) {
	dir := os.Getenv("REACH_BENCH_ACCOUNT")
	if dir == "" {
		t.Skip("REACH_BENCH_ACCOUNT names no folder of traces")
	}
	client, err := parsedTrace(filepath.Join(dir, "client.trace"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.trace"))
	for _, f := range files {
		if filepath.Base(f) == "client.trace" {
			continue
		}
		served, err := parsedTrace(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s:\n%s", filepath.Base(f), formatAccount(account(served, client)))
	}
}

// parsedTrace reads the execution trace in file through `go tool trace
// -d=parsed`.
func parsedTrace(file string) (map[int64][]transition, error) {
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "tool", "trace", "-d=parsed", file)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ts, err := parseTransitions(out)
	if werr := cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("go tool trace %s: %w", file, werr)
	}
	return ts, err
}

// transition is one goroutine's change of state in a trace: when (ns of
// the monotonic clock), from and to, and the stack it was at (function
// names, innermost first) when it left running.
type transition struct {
	at       int64
	from, to string
	stack    []string
}

// parseTransitions reads `go tool trace -d=parsed` and returns each
// goroutine's state transitions, in order.
func parseTransitions(r io.Reader) (map[int64][]transition, error) {
	gs := map[int64][]transition{}
	var cur *transition
	var g int64
	var own, other []string // the event's TransitionStack and Stack
	mode := 0
	end := func() {
		if cur != nil {
			cur.stack = own
			if len(own) == 0 {
				cur.stack = other
			}
			gs[g] = append(gs[g], *cur)
		}
		cur, own, other, mode = nil, nil, nil, 0
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "M="):
			end()
			if !strings.Contains(line, " StateTransition ") {
				continue
			}
			var tr transition
			var goid int64 = -1
			for f := range strings.FieldsSeq(line) {
				switch {
				case strings.HasPrefix(f, "Time="):
					tr.at, _ = strconv.ParseInt(f[len("Time="):], 10, 64)
				case strings.HasPrefix(f, "GoID="):
					goid, _ = strconv.ParseInt(f[len("GoID="):], 10, 64)
				case strings.Contains(f, "->") && !strings.Contains(f, "="):
					tr.from, tr.to, _ = strings.Cut(f, "->")
				}
			}
			if goid >= 0 && tr.to != "" {
				cur, g = &tr, goid
			}
		case cur == nil:
		case line == "TransitionStack=":
			mode = 1
		case line == "Stack=":
			mode = 2
		case strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, "\t\t"):
			fn, _, _ := strings.Cut(strings.TrimSpace(line), " @ ")
			if mode == 1 {
				own = append(own, fn)
			} else if mode == 2 {
				other = append(other, fn)
			}
		}
	}
	end()
	return gs, sc.Err()
}

// The stages of a served call, in order (see account).
var stages = []string{
	"1 client's request write begins -> reach's goroutine runnable",
	"2 reach: the request taken -> the upstream's request written",
	"  2 of it: running",
	"  2 of it: SQLite's C (cgo)",
	"  2 of it: other system calls",
	"  2 of it: runnable (waiting for a P)",
	"  2 of it: parked (channels, locks, sleeps)",
	"3 the upstream's request written -> its answer wakes reach",
	"4 reach: the answer taken -> the client's answer written",
	"  4 of it: running",
	"  4 of it: other system calls",
	"  4 of it: runnable (waiting for a P)",
	"  4 of it: parked (channels, locks, sleeps)",
	"5 reach's answer write begins -> client's read loop runnable",
	"= client's request write -> its read loop runnable",
}

// account lays out each call that reach's goroutine served in served (a
// goroutine of fasthttp's that ran answerFast), stage by stage: from the
// client's request write (the last write of a client's net/http writeLoop
// before reach's goroutine woke with it, from client) to the wake of the
// client's read loop after reach's answer write. A call is a write if
// its goroutine called into SQLite before the upstream's request. It
// returns each stage's durations (ns) by kind.
func account(served, client map[int64][]transition) map[string]map[string][]int64 {
	type call struct {
		a, b, c, d int64 // woken with the request; upstream write; answer wakes; answer write
		kind       string
		pre, post  map[string]int64
	}
	has := func(st []string, s string) bool {
		return slices.ContainsFunc(st, func(f string) bool { return strings.Contains(f, s) })
	}
	leaf := func(st []string) string {
		if len(st) == 0 {
			return ""
		}
		return st[0]
	}
	var calls []call
	for _, ts := range served {
		if !slices.ContainsFunc(ts, func(t transition) bool { return has(t.stack, "answerFast") }) {
			continue
		}
		var c *call
		var last int64
		var part string
		upWait := false
		for _, t := range ts {
			if c != nil && part != "" {
				m := c.pre
				if c.c != 0 {
					m = c.post
				}
				if c.b == 0 || c.c != 0 {
					m[part] += t.at - last
				}
			}
			last = t.at
			if c == nil {
				if t.from == "Waiting" && t.to == "Runnable" {
					c = &call{a: t.at, kind: "read", pre: map[string]int64{}, post: map[string]int64{}}
					part = "runnable (waiting for a P)"
				}
				continue
			}
			isWrite := t.to == "Syscall" && leaf(t.stack) == "syscall.write"
			switch {
			case isWrite && has(t.stack, "RoundTrip") && c.b == 0:
				c.b = t.at
			case t.to == "Waiting" && has(t.stack, "mcpwire.(*source).Read"):
				upWait = true
			case upWait && t.from == "Waiting" && t.to == "Runnable":
				c.c, upWait = t.at, false
			case isWrite && has(t.stack, "serveConn") && !has(t.stack, "RoundTrip"):
				if c.b != 0 && c.c != 0 {
					c.d = t.at
					calls = append(calls, *c)
				}
				c, part = nil, ""
				continue
			}
			switch t.to {
			case "Running":
				part = "running"
			case "Runnable":
				part = "runnable (waiting for a P)"
			case "Waiting":
				part = "parked (channels, locks, sleeps)"
			case "Syscall":
				part = "other system calls"
				if strings.Contains(leaf(t.stack), "go-sqlite3") {
					part = "SQLite's C (cgo)"
					if c.b == 0 {
						c.kind = "write"
					}
				}
			default:
				part = ""
			}
		}
	}
	var writes, wakes []int64
	for _, ts := range client {
		for i, t := range ts {
			if t.to == "Syscall" && leaf(t.stack) == "syscall.write" && has(t.stack, "writeLoop") {
				writes = append(writes, t.at)
			}
			if i > 0 && t.from == "Waiting" && t.to == "Runnable" && has(ts[i-1].stack, "readLoop") {
				wakes = append(wakes, t.at)
			}
		}
	}
	slices.Sort(writes)
	slices.Sort(wakes)
	out := map[string]map[string][]int64{}
	for _, c := range calls {
		i := sort.Search(len(writes), func(i int) bool { return writes[i] >= c.a }) - 1
		j := sort.Search(len(wakes), func(i int) bool { return wakes[i] > c.d })
		if i < 0 || j >= len(wakes) {
			continue // outside the client's trace
		}
		w, k := writes[i], wakes[j]
		m := out[c.kind]
		if m == nil {
			m = map[string][]int64{}
			out[c.kind] = m
		}
		add := func(stage int, d int64) { m[stages[stage]] = append(m[stages[stage]], d) }
		add(0, c.a-w)
		add(1, c.b-c.a)
		for s := 2; s <= 6; s++ {
			add(s, c.pre[strings.TrimPrefix(stages[s], "  2 of it: ")])
		}
		add(7, c.c-c.b)
		add(8, c.d-c.c)
		for s := 9; s <= 12; s++ {
			add(s, c.post[strings.TrimPrefix(stages[s], "  4 of it: ")])
		}
		add(13, k-c.d)
		add(14, k-w)
	}
	return out
}

// formatAccount prints an account: each kind's calls, and each stage's
// median and quartiles in µs.
func formatAccount(acc map[string]map[string][]int64) string {
	var b strings.Builder
	for _, kind := range []string{"write", "read"} {
		m := acc[kind]
		if m == nil {
			continue
		}
		fmt.Fprintf(&b, "a %s, %d calls: median (p25-p75) µs\n", kind, len(m[stages[0]]))
		for _, s := range stages {
			xs := slices.Sorted(slices.Values(m[s]))
			if len(xs) == 0 {
				continue
			}
			q := func(f float64) float64 { return float64(xs[int(f*float64(len(xs)-1))]) / 1e3 }
			fmt.Fprintf(&b, "  %-64s %7.1f (%.1f-%.1f)\n", s, q(0.5), q(0.25), q(0.75))
		}
	}
	return b.String()
}
