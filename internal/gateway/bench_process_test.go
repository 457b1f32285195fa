package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The multi-process benchmarks run each party in a process of its own, as
// they are deployed: the go-sdk clients in the benchmark's process, the
// upstream, the gateway and the bare reverse proxy each in a child (the
// test binary again, with REACH_BENCH_ROLE set). No party pays for another
// one's garbage collection, and every hop crosses processes.

// benchRoleEnv names the role a child of the multi-process benchmarks plays.
const benchRoleEnv = "REACH_BENCH_ROLE"

// runBenchRole serves role (upstream, gateway or proxy; the last two in
// front of REACH_BENCH_TARGET) on loopback, prints its URL, and serves
// until its standard input closes.
func runBenchRole(role string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // the parent closes stdin (or dies): stop
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	if dir := os.Getenv("REACH_BENCH_PROFILE"); dir != "" { // a CPU profile of this child, for pprof
		f, err := os.Create(filepath.Join(dir, role+".prof"))
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	base := "http://" + ln.Addr().String()
	target := os.Getenv("REACH_BENCH_TARGET")
	var h http.Handler
	switch role {
	case "upstream":
		s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		type in struct {
			Text string `json:"text"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
			})
		h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	case "proxy":
		u, err := url.Parse(target)
		if err != nil {
			return err
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 128
		h = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) }, Transport: tr, FlushInterval: -1,
			ErrorLog: log.New(io.Discard, "", 0)}
	case "relay":
		u, err := url.Parse(target)
		if err != nil {
			return err
		}
		go func() { <-ctx.Done(); ln.Close() }()
		fmt.Println(base + u.Path)
		tcpRelay(ln, u.Host)
		return nil
	case "gateway":
		g, err := New(ctx, &config.Config{
			Upstreams: []config.Upstream{{Name: "up", URL: target}},
			Budgets:   map[string]config.Budget{"default": {}},
		}, nil)
		if err != nil {
			return err
		}
		defer g.Close()
		fmt.Println(base + "/mcp")
		return g.Serve(ctx, ln) // as `reach serve` serves
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Println(base)
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// benchChild is a child process of the multi-process benchmarks.
type benchChild struct {
	url string
	pid int
}

// startBenchChild starts the test binary as role in front of target and
// returns its URL; the child ends with the benchmark.
func startBenchChild(b *testing.B, role, target string) benchChild {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchRoleEnv+"="+role, "REACH_BENCH_TARGET="+target)
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
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("bench %s did not start: %v", role, err)
	}
	return benchChild{url: strings.TrimSpace(line), pid: cmd.Process.Pid}
}

// childCPU is the user and system CPU time a child has used (Linux).
func childCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from the 3rd on
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// newProcessPaths starts the upstream, the gateway and the proxy, each in
// a process of its own.
func newProcessPaths(b *testing.B) *benchPaths {
	up := startBenchChild(b, "upstream", "")
	gw := startBenchChild(b, "gateway", up.url)
	px := startBenchChild(b, "proxy", up.url)
	rl := startBenchChild(b, "relay", up.url)
	return &benchPaths{direct: up.url, reach: gw.url, prox: px.url, relay: rl.url,
		pids: map[string]int{"direct": up.pid, "reach": gw.pid, "proxy": px.pid, "relay": rl.pid}}
}
