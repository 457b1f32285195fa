package gateway

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/cputime"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway benchmarks put three paths to one Go upstream MCP server
// (go-sdk, one read tool, Streamable HTTP on loopback) side by side in one
// run: direct, through reach, and through a bare reverse proxy
// (httputil.ReverseProxy, the floor of "any second loopback hop"). The
// clients are the go-sdk's, each on a transport that keeps enough idle
// connections for 64 concurrent clients. Every call has a timeout, so a
// stuck path fails the benchmark instead of hanging it.

// benchUpstream is a Go MCP server with one read tool, served over
// Streamable HTTP on loopback.
func benchUpstream(b *testing.B) *httptest.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	return serveLabeled(b, "upstream", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
}

// serveLabeled serves h on loopback with the profiler label party=name on
// every goroutine the server starts (and those they start: the gateway's
// upstream connections), so that a CPU profile splits by party:
//
//	go tool pprof -tagfocus party=gateway -top gateway.test cpu.out
func serveLabeled(b *testing.B, name string, h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			benchConns.Add(1)
		}
	}
	pprof.Do(context.Background(), pprof.Labels("party", name), func(context.Context) { srv.Start() })
	b.Cleanup(srv.Close)
	return srv
}

// benchProxy is a bare reverse proxy to target: what any second HTTP hop
// costs, with nothing parsed.
func benchProxy(b *testing.B, target string) *httptest.Server {
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 256
	tr.MaxIdleConnsPerHost = 128
	tr.ResponseHeaderTimeout = 10 * time.Second
	p := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport:     tr,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0), // clients closing idle connections at the end
	}
	return serveLabeled(b, "proxy", p)
}

// tcpRelay serves ln by pairing each connection with one of its own to
// target (host:port) and copying bytes both ways: the floor of any second
// hop, with nothing parsed, not even HTTP.
func tcpRelay(ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		benchConns.Add(1)
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

// benchRelay serves a TCP relay to target's host on loopback.
func benchRelay(b *testing.B, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	pprof.Do(context.Background(), pprof.Labels("party", "relay"), func(context.Context) { go tcpRelay(ln, u.Host) })
	return "http://" + ln.Addr().String() + u.Path
}

// benchConns counts the connections the benchmarks' servers accepted.
var benchConns atomic.Int64

// benchHTTPClient is the clients' HTTP client: one transport for all
// sessions, with idle connections for 64 concurrent clients per path.
var benchHTTPClient = func() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 1024
	tr.MaxIdleConnsPerHost = 256
	return &http.Client{Transport: tr}
}()

func benchClient(b *testing.B, url, protocol string) *mcp.ClientSession {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench-client", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: benchHTTPClient},
		&mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// benchPaths are the servers a benchmark calls.
type benchPaths struct {
	g                          *Gateway       // nil when the gateway runs in a process of its own
	direct, reach, prox, relay string         // URLs
	pids                       map[string]int // the processes of the upstream (direct), gateway (reach), proxy and relay, when they are children
}

func newBenchPaths(b *testing.B) *benchPaths {
	up := benchUpstream(b)
	cfg := &config.Config{
		Upstreams: []config.Upstream{{Name: "up", URL: up.URL}},
		Budgets:   map[string]config.Budget{"default": {}},
	}
	g, err := New(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	gw := serveLabeled(b, "gateway", g.Handler())
	return &benchPaths{g: g, direct: up.URL, reach: gw.URL + "/mcp", prox: benchProxy(b, up.URL).URL, relay: benchRelay(b, up.URL)}
}

// benchCall makes one tools/call with new arguments and returns its latency.
func benchCall(b *testing.B, cs *mcp.ClientSession, name string, i int) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "call " + strconv.Itoa(i)}})
	d := time.Since(start)
	if err != nil || res.IsError {
		b.Errorf("%s: %v %+v", name, err, res)
	}
	return d
}

// BenchmarkGatewayToolsCall measures one MCP tools/call over loopback HTTP
// from one client, directly, through reach and through a bare reverse
// proxy, interleaved in one run, and reports each median and p99 and the
// ratios of the medians to the direct one (the quality bar for reach: at
// most 1.3). Every call has new arguments, so the loop guard has nothing to
// refuse; the request's budget is unlimited. The clients are the go-sdk's
// on protocol 2025-11-25 (sessions: the upstream has them, so a direct
// client could not use the sessionless protocol); a fourth client calls
// through reach on the sessionless protocol (reach-sessionless-µs).
//
//	go test -run '^$' -bench GatewayToolsCall -benchtime 3000x ./internal/gateway/
func BenchmarkGatewayToolsCall(b *testing.B) { benchToolsCall(b, newBenchPaths(b)) }

// BenchmarkGatewayToolsCallProcesses is BenchmarkGatewayToolsCall with the
// upstream, the gateway and the proxy each in a process of its own, as
// they are deployed.
//
//	go test -run '^$' -bench GatewayToolsCallProcesses -benchtime 3000x ./internal/gateway/
func BenchmarkGatewayToolsCallProcesses(b *testing.B) { benchToolsCall(b, newProcessPaths(b)) }

func benchToolsCall(b *testing.B, p *benchPaths) {
	direct := benchClient(b, p.direct, mcpwire.SessionProtocol)
	viaReach := benchClient(b, p.reach, mcpwire.SessionProtocol)
	viaProxy := benchClient(b, p.prox, mcpwire.SessionProtocol)
	viaRelay := benchClient(b, p.relay, mcpwire.SessionProtocol)
	sessionless := benchClient(b, p.reach, mcpwire.StatelessProtocol) // reach only: the upstream has sessions
	for i := range 50 {                                               // warm up connections and caches
		benchCall(b, direct, "echo", i)
		benchCall(b, viaReach, "up__echo", i)
		benchCall(b, viaProxy, "echo", i)
		benchCall(b, viaRelay, "echo", i)
		benchCall(b, sessionless, "up__echo", i)
	}
	var hits int64
	if p.g != nil {
		hits = p.g.front.FastCalls()
	}
	var ds, rs, ps, ls, ss []time.Duration
	i := 0
	for b.Loop() {
		ds = append(ds, benchCall(b, direct, "echo", i))
		rs = append(rs, benchCall(b, viaReach, "up__echo", i))
		ps = append(ps, benchCall(b, viaProxy, "echo", i))
		ls = append(ls, benchCall(b, viaRelay, "echo", i))
		ss = append(ss, benchCall(b, sessionless, "up__echo", i))
		i++
	}
	if n := int64(2 * i); p.g != nil && p.g.front.FastCalls()-hits != n {
		n = p.g.front.FastCalls() - hits
		b.Errorf("%d of %d calls through reach took the lean path", n, 2*i)
	}
	md, mr, mp, ml := quantile(ds, 0.5), quantile(rs, 0.5), quantile(ps, 0.5), quantile(ls, 0.5)
	b.ReportMetric(float64(md.Microseconds()), "direct-µs")
	b.ReportMetric(float64(mr.Microseconds()), "reach-µs")
	b.ReportMetric(float64(mp.Microseconds()), "proxy-µs")
	b.ReportMetric(float64(ml.Microseconds()), "relay-µs")
	b.ReportMetric(float64(quantile(ds, 0.99).Microseconds()), "direct-p99-µs")
	b.ReportMetric(float64(quantile(rs, 0.99).Microseconds()), "reach-p99-µs")
	b.ReportMetric(float64(quantile(ps, 0.99).Microseconds()), "proxy-p99-µs")
	b.ReportMetric(float64(quantile(ss, 0.5).Microseconds()), "reach-sessionless-µs")
	b.ReportMetric(float64(mr)/float64(md), "ratio")
	b.ReportMetric(float64(mp)/float64(md), "proxy-ratio")
	b.ReportMetric(float64(ml)/float64(md), "relay-ratio")
}

// BenchmarkGatewayThroughput measures calls per second with 64 concurrent
// client sessions, each calling in a loop: directly, through reach and
// through a bare reverse proxy, in interleaved rounds of 64×16 calls per
// path (one round of each per iteration). It reports each path's median
// rate and its ratio to the direct one (the quality bar for reach: more
// than 0.85), and the process CPU per call of each path; since client,
// gateway and upstream share this process, reach's CPU per call minus the
// direct one is what the gateway (and its second hop) costs.
//
//	go test -run '^$' -bench GatewayThroughput -benchtime 20x ./internal/gateway/
func BenchmarkGatewayThroughput(b *testing.B) { benchThroughput(b, newBenchPaths(b)) }

// BenchmarkGatewayThroughputProcesses is BenchmarkGatewayThroughput with
// the upstream, the gateway and the proxy each in a process of its own; the
// CPU per call it reports is the middle process's (gateway, proxy) and the
// upstream's.
//
//	go test -run '^$' -bench GatewayThroughputProcesses -benchtime 20x ./internal/gateway/
func BenchmarkGatewayThroughputProcesses(b *testing.B) { benchThroughput(b, newProcessPaths(b)) }

func benchThroughput(b *testing.B, p *benchPaths) {
	const clients, perClient = 64, 16
	type path struct {
		name     string
		tool     string
		sessions []*mcp.ClientSession
		rates    []float64
		cpu      []float64
	}
	paths := []*path{{name: "direct", tool: "echo"}, {name: "reach", tool: "up__echo"}, {name: "proxy", tool: "echo"}, {name: "relay", tool: "echo"}}
	for _, pt := range paths {
		u := map[string]string{"direct": p.direct, "reach": p.reach, "proxy": p.prox, "relay": p.relay}[pt.name]
		for range clients {
			pt.sessions = append(pt.sessions, benchClient(b, u, mcpwire.SessionProtocol))
		}
	}
	var seq atomic.Int64 // new arguments for every call, across rounds
	round := func(pt *path) (rate, cpuPerCall float64) {
		var next atomic.Int64
		total := int64(clients * perClient)
		cpuOf := cputime.Self
		if p.pids != nil { // the process that serves this path: the upstream, the gateway, the proxy
			pid := p.pids[pt.name]
			cpuOf = func() time.Duration { return childCPU(pid) }
		}
		cpu0 := cpuOf()
		start := time.Now()
		var wg sync.WaitGroup
		for _, cs := range pt.sessions {
			wg.Go(func() {
				pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("party", "client")))
				for i := next.Add(1); i <= total; i = next.Add(1) {
					benchCall(b, cs, pt.tool, int(seq.Add(1)))
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		cpu := cpuOf() - cpu0
		return float64(total) / elapsed.Seconds(), float64(cpu.Microseconds()) / float64(total)
	}
	for _, pt := range paths { // warm up connections and caches
		round(pt)
	}
	conns, calls := benchConns.Load(), 0
	for b.Loop() {
		calls += len(paths) * clients * perClient
		for _, pt := range paths {
			r, c := round(pt)
			pt.rates = append(pt.rates, r)
			pt.cpu = append(pt.cpu, c)
		}
	}
	med := func(xs []float64) float64 { s := slices.Clone(xs); slices.Sort(s); return s[len(s)/2] }
	d, r, x, l := paths[0], paths[1], paths[2], paths[3]
	b.ReportMetric(med(d.rates), "direct-calls/s")
	b.ReportMetric(med(r.rates), "reach-calls/s")
	b.ReportMetric(med(x.rates), "proxy-calls/s")
	b.ReportMetric(med(l.rates), "relay-calls/s")
	b.ReportMetric(med(r.rates)/med(d.rates), "ratio")
	b.ReportMetric(med(x.rates)/med(d.rates), "proxy-ratio")
	b.ReportMetric(med(l.rates)/med(d.rates), "relay-ratio")
	b.ReportMetric(med(d.cpu), "direct-cpu-µs/call")
	b.ReportMetric(med(r.cpu), "reach-cpu-µs/call")
	b.ReportMetric(med(x.cpu), "proxy-cpu-µs/call")
	b.ReportMetric(med(l.cpu), "relay-cpu-µs/call")
	// Connections opened after the warm-up, on all servers: 0 when every
	// client, the proxy and the gateway reuse theirs.
	b.ReportMetric(float64(benchConns.Load()-conns)/float64(calls), "dials/call")
}

// quantile returns the q-quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
