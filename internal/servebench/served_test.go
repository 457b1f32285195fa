package servebench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"

	"github.com/agentreach/reach/internal/testport"
)

// The benchmarks here run every party in a process of its own, as deployed:
// the go-sdk clients in the benchmark's process; the upstream, the relay and
// the pass-through in children (this test binary again, with roleEnv set);
// reach as the binary `go build ./cmd/reach` makes, run as `reach serve
// --config` with a data folder; and an outside gateway, when
// REACH_BENCH_OUTSIDE names one (see outsideGateway).

const (
	roleEnv   = "REACH_SERVEBENCH_ROLE"
	targetEnv = "REACH_SERVEBENCH_TARGET"

	sessionProtocol     = "2025-11-25" // what the direct upstream speaks
	sessionlessProtocol = "2026-07-28"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		if err := runRole(role, os.Getenv(targetEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "servebench:", role+":", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	// The reach binary built for this run (63 MB), not left in the
	// temporary folder of every run that benchmarked.
	if dir := builtDir; dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// builtDir is the folder reachBinary built reach in, if it did.
var builtDir string

// runRole serves role (upstream; relay or pass in front of target) on a
// loopback port, prints its URL, and serves until standard input closes.
func runRole(role, target string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { // the parent closed stdin, or died
		io.Copy(io.Discard, os.Stdin)
		ln.Close()
		os.Exit(0)
	}()
	base := "http://" + ln.Addr().String()
	switch role {
	case "upstream":
		fmt.Println(base)
		srv := &http.Server{Handler: upstreamHandler(), ReadHeaderTimeout: 10 * time.Second}
		return srv.Serve(ln)
	case "relay":
		u, err := url.Parse(target)
		if err != nil {
			return err
		}
		fmt.Println(base + u.Path)
		relay(ln, u.Host)
		return nil
	case "pass":
		u, err := url.Parse(target)
		if err != nil {
			return err
		}
		fmt.Println(base + u.Path)
		return pass(ln, u.Host)
	}
	if strings.HasPrefix(role, "stack-") {
		u, err := url.Parse(target)
		if err != nil {
			return err
		}
		fmt.Println(base + u.Path)
		return stackRole(ln, role, target)
	}
	return fmt.Errorf("unknown role %q", role)
}

// upstreamHandler is a go-sdk MCP server with two tools that echo their
// text: echo, without annotations (so reach treats it as a write, as it
// does most MCP tools), and echo_read, declared read-only.
func upstreamHandler() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-upstream", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	echo := func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its text."}, echo)
	mcp.AddTool(s, &mcp.Tool{Name: "echo_read", Description: "Echoes its text.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, echo)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

// relay pairs every connection with one to target and copies bytes both
// ways: no HTTP at all, the least any second hop costs.
func relay(ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				return
			}
			go func() { io.Copy(u, c); u.Close() }()
			io.Copy(c, u)
			c.Close()
		}()
	}
}

// pass is an HTTP pass-through on fasthttp: it parses each request and
// sends it on to target over pooled connections, checking nothing. A GET
// (the client's optional standalone SSE stream) is answered 405, which MCP
// allows a server that offers no such stream.
func pass(ln net.Listener, target string) error {
	hc := &fasthttp.HostClient{Addr: target, MaxConns: 1024, ReadTimeout: 30 * time.Second}
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if ctx.IsGet() {
			ctx.SetStatusCode(fasthttp.StatusMethodNotAllowed)
			return
		}
		ctx.Request.SetHost(target)
		if err := hc.Do(&ctx.Request, &ctx.Response); err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadGateway)
		}
	}}
	return s.Serve(ln)
}

// child is a process of the benchmark's.
type child struct {
	url   string
	pid   int
	pprof string // a reach child's pprof base URL (REACH_BENCH_PPROF)
}

// startRole starts this test binary as role in front of target.
func startRole(b *testing.B, role, target string) child {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+role, targetEnv+"="+target)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		waitOrKill(cmd)
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("%s did not start: %v", role, err)
	}
	return child{url: strings.TrimSpace(line), pid: cmd.Process.Pid}
}

func waitOrKill(cmd *exec.Cmd) {
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// reachBinary builds cmd/reach once per test binary run, unless
// REACH_BENCH_BINARY names a reach binary to measure instead (another
// build, to compare two side by side). With REACH_BENCH_PPROF=1 it is
// built with -tags pprof (cmd/reach/pprof.go), and every reach child
// serves pprof on a loopback port of its own: the benchmarks then report
// its allocations per call, and its profiles can be taken meanwhile (the
// port is in the child's log, reach.log, as REACH_PPROF=).
var reachBinary = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("REACH_BENCH_BINARY"); bin != "" {
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "servebench-")
	if err != nil {
		return "", err
	}
	builtDir = dir
	bin := filepath.Join(dir, "reach")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	args := []string{"build", "-o", bin}
	if os.Getenv("REACH_BENCH_PPROF") == "1" {
		args = append(args, "-tags", "pprof")
	}
	cmd := exec.Command(goTool, append(args, "../../cmd/reach")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building reach: %v\n%s", err, out)
	}
	return bin, nil
})

// freeAddr returns a loopback address that was free a moment ago, for a
// gateway started on it: below the kernel's ephemeral range, which the
// listeners and outbound connections of other processes may take before
// the gateway binds it (testport).
func freeAddr(b *testing.B) string {
	addr, err := testport.Addr()
	if err != nil {
		b.Fatal(err)
	}
	return addr
}

// startReach runs `reach serve` as a user would, with a configuration that
// names the upstream and a data folder (so the store, the audit log and the
// checkpoints are on). Its budget is unlimited, since 64 clients make
// thousands of calls each; everything else is as configured by default.
func startReach(b *testing.B, upstream string) child {
	b.Helper()
	bin, err := reachBinary()
	if err != nil {
		b.Fatal(err)
	}
	return startReachBinary(b, bin, upstream)
}

// startReachBinary is startReach with the reach binary bin.
func startReachBinary(b *testing.B, bin, upstream string) child {
	b.Helper()
	dir := b.TempDir()
	addr := freeAddr(b)
	cfg := fmt.Sprintf("listen: %s\ndata: ./data\nupstreams:\n  - name: up\n    url: %s\nbudgets:\n  default: {turns: 0, depth: 0, tool_calls: 0, wall: 0s}\n", addr, upstream)
	if err := os.WriteFile(filepath.Join(dir, "reach.yaml"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "reach.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--config", filepath.Join(dir, "reach.yaml"))
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	var pprof string
	if os.Getenv("REACH_BENCH_PPROF") == "1" {
		pa := freeAddr(b)
		cmd.Env = append(os.Environ(), "REACH_PPROF="+pa)
		pprof = "http://" + pa
		fmt.Fprintf(logf, "REACH_PPROF=%s\n", pa)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		waitOrKill(cmd)
		logf.Close()
	})
	base := "http://" + addr
	waitHealthy(b, base+"/healthz", func() string { out, _ := os.ReadFile(logf.Name()); return string(out) })
	return child{url: base + "/mcp", pid: cmd.Process.Pid, pprof: pprof}
}

// outsideGateway starts the gateway REACH_BENCH_OUTSIDE names, a shell
// command in which {upstream} is the upstream's URL and {listen} a free
// loopback host:port, e.g. for TBXark/mcp-proxy built from source:
//
//	REACH_BENCH_OUTSIDE='sed "s#{U}#{upstream}#g; s#{L}#{listen}#g" /path/to/proxy.json.in > proxy.json && exec /path/to/mcp-proxy --config proxy.json'
//	REACH_BENCH_OUTSIDE_URL='http://{listen}/up/mcp'
//
// with proxy.json.in (docs/BENCHMARKS.md):
//
//	{"mcpProxy": {"baseURL": "http://{L}", "addr": "{L}", "name": "mcp-proxy", "version": "1", "type": "streamable-http",
//	  "options": {"panicIfInvalid": true, "logEnabled": false}},
//	 "mcpServers": {"up": {"url": "{U}", "transportType": "streamable-http", "options": {"logEnabled": false}}}}
//
// (exec, so that the process measured is the gateway, not the shell). The
// client URL is REACH_BENCH_OUTSIDE_URL (default http://{listen}/mcp), the
// tool REACH_BENCH_OUTSIDE_TOOL (default echo). ok is false when none is
// named.
func outsideGateway(b *testing.B, upstream string) (c child, tool string, ok bool) {
	b.Helper()
	tmpl := os.Getenv("REACH_BENCH_OUTSIDE")
	if tmpl == "" {
		return child{}, "", false
	}
	addr := freeAddr(b)
	subst := strings.NewReplacer("{upstream}", upstream, "{listen}", addr)
	cmd := exec.Command("sh", "-c", subst.Replace(tmpl))
	cmd.Dir = b.TempDir()
	var log strings.Builder
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return log.Write(p) })
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		waitOrKill(cmd)
	})
	u := subst.Replace(cmp(os.Getenv("REACH_BENCH_OUTSIDE_URL"), "http://{listen}/mcp"))
	waitDialable(b, addr, func() string { mu.Lock(); defer mu.Unlock(); return log.String() })
	return child{url: u, pid: cmd.Process.Pid}, cmp(os.Getenv("REACH_BENCH_OUTSIDE_TOOL"), "echo"), true
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func waitHealthy(b *testing.B, u string, logs func() string) {
	b.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("%s did not answer 200 within a minute; its log:\n%s", u, logs())
}

func waitDialable(b *testing.B, addr string, logs func() string) {
	b.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("the outside gateway did not listen on %s within a minute; its output:\n%s", addr, logs())
}

// httpClient is the clients' HTTP client: idle connections enough for 64
// concurrent sessions per path.
var httpClient = func() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 2048
	tr.MaxIdleConnsPerHost = 256
	return &http.Client{Transport: tr}
}()

func connect(b *testing.B, u, protocol string) *mcp.ClientSession {
	b.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench-client", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: httpClient},
		&mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		b.Fatalf("connecting to %s: %v", u, err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// seq gives every call new arguments, so that no guard has a repeat to
// refuse.
var seq atomic.Int64

// call makes one call of tool on cs, through the path named at. Its bound
// is a minute: the benchmarks run 64 clients a path, and a run of every
// benchmark at once (make bench-smoke) on two cores can hold a call for
// seconds; a call that never answers still fails the run, naming its path.
func call(b *testing.B, cs *mcp.ClientSession, at, tool string) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool,
		Arguments: map[string]any{"text": "call " + strconv.FormatInt(seq.Add(1), 10)}})
	d := time.Since(start)
	if err != nil {
		b.Errorf("%s through %s: %v", tool, at, err)
	} else if res.IsError {
		b.Errorf("%s through %s: an error result: %s", tool, at, errText(res))
	}
	return d
}

// path is one way of reaching the upstream's tool.
type path struct {
	name     string
	url      string
	tool     string
	protocol string
	pid      int    // the process in the middle (the upstream's for direct)
	pprof    string // its pprof base URL, when it serves one
}

// setup starts every party and returns the paths, direct first.
func setup(b *testing.B) []*path {
	up := startRole(b, "upstream", "")
	rl := startRole(b, "relay", up.url)
	ps := startRole(b, "pass", up.url)
	rc := startReach(b, up.url)
	paths := []*path{
		{name: "direct", url: up.url, tool: "echo", protocol: sessionProtocol, pid: up.pid},
		{name: "relay", url: rl.url, tool: "echo", protocol: sessionProtocol, pid: rl.pid},
		{name: "pass", url: ps.url, tool: "echo", protocol: sessionProtocol, pid: ps.pid},
		{name: "reach-write", url: rc.url, tool: "up__echo", protocol: sessionProtocol, pid: rc.pid, pprof: rc.pprof},
		{name: "reach-read", url: rc.url, tool: "up__echo_read", protocol: sessionProtocol, pid: rc.pid, pprof: rc.pprof},
		{name: "reach-write-sessionless", url: rc.url, tool: "up__echo", protocol: sessionlessProtocol, pid: rc.pid, pprof: rc.pprof},
		{name: "reach-read-sessionless", url: rc.url, tool: "up__echo_read", protocol: sessionlessProtocol, pid: rc.pid, pprof: rc.pprof},
	}
	if bin := os.Getenv("REACH_BENCH_BEFORE"); bin != "" {
		// Another reach build beside this one, to compare two in one run.
		bc := startReachBinary(b, bin, up.url)
		paths = append(paths,
			&path{name: "before-write", url: bc.url, tool: "up__echo", protocol: sessionProtocol, pid: bc.pid, pprof: bc.pprof},
			&path{name: "before-read", url: bc.url, tool: "up__echo_read", protocol: sessionProtocol, pid: bc.pid, pprof: bc.pprof},
			&path{name: "before-write-sessionless", url: bc.url, tool: "up__echo", protocol: sessionlessProtocol, pid: bc.pid, pprof: bc.pprof},
			&path{name: "before-read-sessionless", url: bc.url, tool: "up__echo_read", protocol: sessionlessProtocol, pid: bc.pid, pprof: bc.pprof})
	}
	if oc, tool, ok := outsideGateway(b, up.url); ok {
		paths = append(paths, &path{name: "outside", url: oc.url, tool: tool, protocol: sessionProtocol, pid: oc.pid})
	}
	if only := os.Getenv("REACH_BENCH_PATHS"); only != "" {
		// Only the paths named (direct always stays: the ratios are to it),
		// e.g. REACH_BENCH_PATHS=relay,reach-read to profile one of them.
		names := strings.Split(only, ",")
		paths = slices.DeleteFunc(paths, func(p *path) bool { return p.name != "direct" && !slices.Contains(names, p.name) })
	}
	return paths
}

// BenchmarkServedLatency makes one call at a time on each path in turn, each
// turn beginning one path later (slot), one client per path, and reports
// each path's median and p99 latency and the medians' ratios to the
// direct call's.
//
//	go test -run '^$' -bench ServedLatency -benchtime 2000x -count 3 ./internal/servebench/
func BenchmarkServedLatency(b *testing.B) { latency(b, setup(b)) }

// latency makes one call at a time on each path in turn and reports each
// path's median and p99 latency and the medians' ratios to the first's,
// and the CPU per call of each process in the middle (see cpuGroups).
func latency(b *testing.B, paths []*path) {
	sessions := make([]*mcp.ClientSession, len(paths))
	for i, p := range paths {
		sessions[i] = connect(b, p.url, p.protocol)
	}
	for range 50 { // warm up connections, caches and the upstream session
		for i, p := range paths {
			call(b, sessions[i], p.name, p.tool)
		}
	}
	groups := cpuGroups(paths[1:])
	cpu0 := make([]time.Duration, len(groups))
	for i, g := range groups {
		cpu0[i] = processCPU(g.pid)
	}
	times := make([][]time.Duration, len(paths))
	traced := startTraces(b, paths[1:])
	for k := 0; b.Loop(); k++ {
		for j := range paths {
			i := slot(k, j, len(paths))
			times[i] = append(times[i], call(b, sessions[i], paths[i].name, paths[i].tool))
		}
	}
	traced()
	for i, g := range groups {
		calls := float64(len(times[0]) * g.paths)
		b.ReportMetric(float64((processCPU(g.pid)-cpu0[i]).Microseconds())/calls, g.name+"-cpu-µs/call")
	}
	direct := quantile(times[0], 0.5)
	for i, p := range paths {
		m := quantile(times[i], 0.5)
		b.ReportMetric(float64(m.Microseconds()), p.name+"-µs")
		b.ReportMetric(float64(quantile(times[i], 0.99).Microseconds()), p.name+"-p99-µs")
		if i > 0 {
			b.ReportMetric(float64(m)/float64(direct), p.name+"-x")
		}
	}
}

// slot is the path called j-th in iteration k of n paths. The orders are
// the rows of a balanced Latin square (Williams'): over n iterations (2n
// for an odd n) every path is called in every place of the order equally
// often, and right after every other path equally often. In a fixed
// order, the path called right after direct measured 0.07-0.17x slower
// one at a time than the same binary in a later place (docs/BENCHMARKS.md,
// "Memory under the bar"); with each iteration only beginning one path
// later, the second path was still the one after direct in all but one
// iteration of n, and measured 0.02-0.05x slower than the same binary as
// the third ("A write one at a time, taken apart once more").
func slot(k, j, n int) int {
	// The first row: 0, 1, n-1, 2, n-2, ...; row r adds r to each.
	first := func(j int) int {
		if j%2 == 1 {
			return (j + 1) / 2
		}
		return (n - j/2) % n
	}
	r := k % n
	if n%2 == 1 && k%(2*n) >= n {
		// An odd n needs the mirrored rows too for every pair to follow
		// each other equally often.
		return (first(n-1-j) + r) % n
	}
	return (first(j) + r) % n
}

// cpuGroup is a process in the middle of one or more paths.
type cpuGroup struct {
	name  string // the paths' names' common prefix (reach-write and reach-read: reach)
	pid   int
	paths int
}

// cpuGroups groups paths by the process in their middle: one call at a
// time, each call's CPU in a process serving several paths (reach serves
// its read and write tools) is that of all its calls, background work
// included, divided by their number.
func cpuGroups(paths []*path) []cpuGroup {
	var gs []cpuGroup
	for _, p := range paths {
		i := slices.IndexFunc(gs, func(g cpuGroup) bool { return g.pid == p.pid })
		if i < 0 {
			gs = append(gs, cpuGroup{name: p.name, pid: p.pid, paths: 1})
			continue
		}
		g := &gs[i]
		g.paths++
		n := 0
		for n < len(g.name) && n < len(p.name) && g.name[n] == p.name[n] {
			n++
		}
		g.name = strings.TrimRight(g.name[:n], "-")
	}
	return gs
}

// BenchmarkServedThroughput runs 64 client sessions per path, each calling
// in a loop, in interleaved rounds (one round of 64×32 calls per path per
// iteration), and reports each path's median calls/s and its ratio to the
// direct path's, the CPU per call of the process in the middle (for
// direct, the upstream's), and the largest resident set size the process
// in the middle had at the end of a round.
//
//	go test -run '^$' -bench ServedThroughput -benchtime 5x -count 3 ./internal/servebench/
func BenchmarkServedThroughput(b *testing.B) { throughput(b, setup(b)) }

// throughput runs 64 client sessions per path in interleaved rounds and
// reports each path's median calls/s, its ratio to the first path's, the
// CPU per call and the largest RSS of the process in the middle.
func throughput(b *testing.B, paths []*path) {
	const clients, perClient = 64, 32
	sessions := make([][]*mcp.ClientSession, len(paths))
	for i, p := range paths {
		for range clients {
			sessions[i] = append(sessions[i], connect(b, p.url, p.protocol))
		}
	}
	allocs := make([][]float64, len(paths))
	commitsPer := make([][]float64, len(paths))
	round := func(i int) (rate, cpuPerCall float64) {
		p := paths[i]
		total := int64(clients * perClient)
		var next atomic.Int64
		m0 := mallocs(p.pprof)
		k0 := commits(p)
		cpu0 := processCPU(p.pid)
		start := time.Now()
		var wg sync.WaitGroup
		for _, cs := range sessions[i] {
			wg.Go(func() {
				for n := next.Add(1); n <= total; n = next.Add(1) {
					call(b, cs, p.name, p.tool)
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		cpu := processCPU(p.pid) - cpu0
		if m0 >= 0 {
			allocs[i] = append(allocs[i], float64(mallocs(p.pprof)-m0)/float64(total))
		}
		if k0 >= 0 {
			commitsPer[i] = append(commitsPer[i], float64(commits(p)-k0)/float64(total))
		}
		return float64(total) / elapsed.Seconds(), float64(cpu.Microseconds()) / float64(total)
	}
	for i := range paths { // warm up
		round(i)
	}
	rates := make([][]float64, len(paths))
	cpus := make([][]float64, len(paths))
	rss := make([]int64, len(paths))
	anon := make([]int64, len(paths))
	for i := range allocs {
		allocs[i] = allocs[i][:0] // the warm-up's do not count
		commitsPer[i] = commitsPer[i][:0]
	}
	for k := 0; b.Loop(); k++ {
		for j := range paths {
			// In slot's orders, as one at a time: a round after a round
			// of the same process (reach's writes, then its reads) or
			// right after direct's is not always the same path's.
			i := slot(k, j, len(paths))
			r, c := round(i)
			rates[i] = append(rates[i], r)
			cpus[i] = append(cpus[i], c)
			if kb, akb := residentKB(paths[i].pid); kb > rss[i] {
				rss[i], anon[i] = kb, akb
			}
		}
	}
	direct := median(rates[0])
	for i, p := range paths {
		b.ReportMetric(median(rates[i]), p.name+"-calls/s")
		if i > 0 {
			b.ReportMetric(median(rates[i])/direct, p.name+"-ratio")
		}
		b.ReportMetric(median(cpus[i]), p.name+"-cpu-µs/call")
		b.ReportMetric(float64(rss[i])/1024, p.name+"-rss-MB")
		b.ReportMetric(float64(anon[i])/1024, p.name+"-anon-MB")
		if len(allocs[i]) > 0 {
			b.ReportMetric(median(allocs[i]), p.name+"-allocs/call")
		}
		if len(commitsPer[i]) > 0 {
			b.ReportMetric(median(commitsPer[i]), p.name+"-commits/call")
		}
	}
}

// commits is how many transactions the store of reach on path p committed
// (reach_store_commits_total on its /metrics), or -1 if p is not reach's
// or its metrics cannot be read.
func commits(p *path) int64 {
	base, ok := strings.CutSuffix(p.url, "/mcp")
	if !ok || !strings.HasPrefix(p.name, "reach-") && !strings.HasPrefix(p.name, "before-") {
		return -1
	}
	v, ok := scrape(base+"/metrics", "reach_store_commits_total ")
	if !ok {
		return -1
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return -1
	}
	return int64(n)
}

// scrape returns what follows prefix on the first line of the text at url
// that begins with it; ok is false if none does or url cannot be read.
func scrape(url, prefix string) (v string, ok bool) {
	resp, err := http.Get(url)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			return v, true
		}
	}
	return "", false
}

// processCPU is the user and system CPU time process pid has used (Linux).
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // the fields from the third on
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// residentKB is process pid's resident set size in KiB, and of it the
// anonymous memory (the heaps; the rest is files, mostly the binary's own
// pages) (Linux).
func residentKB(pid int) (rss, anon int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	kb := func(v string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		return n
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss = kb(v)
		} else if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			anon = kb(v)
		}
	}
	return rss, anon
}

// mallocs is the number of heap objects the Go process serving pprof at
// base has allocated so far (runtime.MemStats.Mallocs, from its heap
// profile's text form), or -1 without base or on failure.
func mallocs(base string) int64 {
	if base == "" {
		return -1
	}
	v, ok := scrape(base+"/debug/pprof/heap?debug=1", "# Mallocs = ")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// The CPU of a process in the middle is reported once per process, under
// its paths' common name.
func TestCPUGroups(t *testing.T) {
	paths := []*path{{name: "relay", pid: 1}, {name: "reach-write", pid: 2}, {name: "reach-read", pid: 2},
		{name: "reach-write-sessionless", pid: 2}, {name: "before-write", pid: 3}, {name: "before-read", pid: 3}, {name: "outside", pid: 4}}
	got := cpuGroups(paths)
	want := []cpuGroup{{"relay", 1, 1}, {"reach", 2, 3}, {"before", 3, 2}, {"outside", 4, 1}}
	if !slices.Equal(got, want) {
		t.Errorf("cpuGroups = %v, want %v", got, want)
	}
}

// errText is the text of an error result, for the benchmark's failure.
func errText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
