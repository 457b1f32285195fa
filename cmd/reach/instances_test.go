package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/agentreach/reach/internal/testport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The end-to-end tests of several instances (issue 17): two real `reach
// serve` processes on one throwaway PostgreSQL, in front of one upstream,
// used through their HTTP APIs and MCP endpoints as a load balancer would
// spread a client's calls.

// shared is the upstream both instances call: it counts every side
// effect, by tool and arguments.
type shared struct {
	mu       sync.Mutex
	runs     map[string]int       // "tool key" -> runs
	started  chan string          // a slow or hold call began (its text)
	stopped  chan time.Time       // a slow call saw its context end, when
	hops     []string             // the gateways hop calls, in turn
	hopped   int                  //
	released map[string]chan bool // hold calls waiting
}

func (s *shared) count(what string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[what]
}

func (s *shared) ran(what string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs[what]++
	return s.runs[what]
}

func sharedUpstream(t testing.TB) (*shared, string) {
	u := &shared{runs: map[string]int{}, started: make(chan string, 256), stopped: make(chan time.Time, 256)}
	s := mcp.NewServer(&mcp.Implementation{Name: "shared", Version: "1"}, nil)
	type keyed struct {
		Key string `json:"key"`
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	// count has no annotations: a write.
	mcp.AddTool(s, &mcp.Tool{Name: "count", Description: "Count a side effect."},
		func(_ context.Context, _ *mcp.CallToolRequest, in keyed) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprintf(`{"key":%q,"run":%d}`, in.Key, u.ran("count "+in.Key))), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "book", Description: "Book something (undo: unbook)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in keyed) (*mcp.CallToolResult, any, error) {
			u.ran("book " + in.Key)
			return text(fmt.Sprintf(`{"booked":%q}`, in.Key)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "unbook", Description: "Cancel a booking."},
		func(_ context.Context, _ *mcp.CallToolRequest, in keyed) (*mcp.CallToolResult, any, error) {
			u.ran("unbook " + in.Key)
			return text(`"unbooked"`), nil, nil
		})
	// hold is a write that waits until its caller goes away (or a minute).
	mcp.AddTool(s, &mcp.Tool{Name: "hold", Description: "Hold until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in keyed) (*mcp.CallToolResult, any, error) {
			u.ran("hold " + in.Key)
			u.started <- in.Key
			select {
			case <-ctx.Done():
			case <-time.After(time.Minute):
			}
			return text(`"held"`), nil, nil
		})
	yes := true
	mcp.AddTool(s, &mcp.Tool{Name: "wipe", Description: "Wipe everything.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		func(_ context.Context, _ *mcp.CallToolRequest, in keyed) (*mcp.CallToolResult, any, error) {
			u.ran("wipe " + in.Key)
			return text(`"wiped"`), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Wait until cancelled.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in keyed) (*mcp.CallToolResult, any, error) {
			u.started <- in.Key
			select {
			case <-ctx.Done():
				u.stopped <- time.Now()
				return nil, nil, ctx.Err()
			case <-time.After(30 * time.Second):
				return text(`"slept"`), nil, nil
			}
		})
	// hop calls itself, with the same arguments, through the next gateway,
	// under its own frame (the traceparent reach sent it).
	mcp.AddTool(s, &mcp.Tool{Name: "hop", Description: "Hop to the next gateway.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in keyed) (*mcp.CallToolResult, any, error) {
			u.mu.Lock()
			if len(u.hops) == 0 || u.hopped >= 4 {
				u.mu.Unlock()
				return text(`"no more hops"`), nil, nil
			}
			next := u.hops[u.hopped%len(u.hops)]
			u.hopped++
			u.mu.Unlock()
			body, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"call_id": "hop", "tool": "up__hop", "arguments": in}}})
			hreq, _ := http.NewRequestWithContext(ctx, "POST", next+"/v1/calls", bytes.NewReader(body))
			if tp, ok := req.Params.Meta["traceparent"].(string); ok {
				hreq.Header.Set("traceparent", tp)
			}
			resp, err := http.DefaultClient.Do(hreq)
			if err != nil {
				return nil, nil, err
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			return text(string(data)), nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{PropagateRequestCancellation: true}))
	t.Cleanup(srv.Close)
	return u, srv.URL
}

// fleet is two `reach serve` processes, a and b, on one PostgreSQL.
type fleet struct {
	t     testing.TB
	pg    *pgtest.Cluster
	url   string
	up    *shared
	cfg   [2]string
	addr  [2]string
	data  [2]string
	cmd   [2]*exec.Cmd
	names [2]string
}

func newFleet(t testing.TB) *fleet {
	t.Helper()
	f := &fleet{t: t, pg: pgtest.Own(t), names: [2]string{"a", "b"}}
	var err error
	if f.url, err = f.pg.CreateDatabase(context.Background(), "reach"); err != nil {
		t.Fatal(err)
	}
	var upURL string
	f.up, upURL = sharedUpstream(t)
	for i := range 2 {
		f.addr[i], f.data[i] = freeAddr(t), t.TempDir()
		f.cfg[i] = writeConfig(t, fmt.Sprintf(`store: %s
instance: %s
instance_ttl: 2s
upstreams:
  - {name: up, url: '%s'}
tools:
  up__book: {undo: {tool: up__unbook, args: '{"key": "{args.key}"}'}}
  up__hop: {reentrancy: reentrant}
budgets:
  default: {tool_calls: 100000, wall: 1h}
`, f.url, f.names[i], upURL))
		f.start(i)
	}
	f.up.hops = []string{f.base(1), f.base(0)}
	t.Cleanup(func() {
		for i := range 2 {
			f.stop(i)
		}
	})
	return f
}

func (f *fleet) start(i int) {
	f.t.Helper()
	f.cmd[i] = startReach(f.t, f.cfg[i], f.addr[i], f.data[i])
}

// stop ends instance i as an operator would (SIGTERM), if it runs. One
// that has not exited a minute later (stopped at a crash point, or hung)
// is killed, and the test's log says so: a test that went on to check a
// graceful stop's outcome then knows it checks a kill's.
func (f *fleet) stop(i int) {
	if c := f.cmd[i]; c != nil {
		c.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			c.Process.Kill()
			<-done
			f.t.Logf("instance %s had not exited a minute after SIGTERM: killed", f.names[i])
		}
		f.cmd[i] = nil
	}
}

// kill ends instance i at once (SIGKILL), as a crash.
func (f *fleet) kill(i int) {
	f.cmd[i].Process.Kill()
	f.cmd[i].Wait()
	f.cmd[i] = nil
}

func (f *fleet) base(i int) string { return "http://" + f.addr[i] }

// end has a client end request id through instance i (POST
// /v1/requests/{id}/end) and returns the answer's status.
func (f *fleet) end(i int, id string) int {
	f.t.Helper()
	resp, err := http.Post(f.base(i)+"/v1/requests/"+id+"/end", "application/json", strings.NewReader(""))
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// awaitEnded reads request id in the shared store until it is stored
// ended, wait has passed, or give (if not nil) says to stop waiting, and
// returns its last stored state and whether it was ended.
func (f *fleet) awaitEnded(id string, wait time.Duration, give func() bool) (state string, ended bool) {
	f.t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, f.url, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	defer st.Close()
	for deadline := time.Now().Add(wait); time.Now().Before(deadline) && (give == nil || !give()); time.Sleep(50 * time.Millisecond) {
		r, err := st.GetRequest(ctx, id)
		if err != nil {
			f.t.Fatal(err)
		}
		if state, ended = r.State, !r.Ended.IsZero(); ended {
			break
		}
	}
	return state, ended
}

// mcp connects an MCP client to instance i.
func (f *fleet) mcp(i int) *mcp.ClientSession {
	f.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.base(i) + "/mcp"}, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { cs.Close() })
	return cs
}

// callMCP calls tool through cs in request, with meta added, and returns
// its status (reach/status) and text.
func callMCP(t testing.TB, cs *mcp.ClientSession, request, tool string, args map[string]any, meta map[string]any) (string, string, map[string]any) {
	t.Helper()
	m := mcp.Meta{"reach/request": request}
	for k, v := range meta {
		m[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: m})
	if err != nil {
		t.Fatalf("%s in %s: %v", tool, request, err)
	}
	text := ""
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	status, _ := res.Meta["reach/status"].(string)
	e, _ := res.Meta["reach/error"].(map[string]any)
	return status, text, e
}

// callHTTP calls tool through POST /v1/calls of base and returns its
// result.
func callHTTP(t testing.TB, base, request, callID, tool, args, key string) map[string]any {
	t.Helper()
	k := ""
	if key != "" {
		k = fmt.Sprintf(`,"idempotency_key":%q`, key)
	}
	body := fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":%q,"tool":%q,"arguments":%s%s}]}`, request, callID, tool, args, k)
	out := postTo(t, base+"/v1/calls", body)
	r, _ := out["results"].([]any)
	if len(r) == 0 {
		t.Fatalf("%s on %s: no result: %v", tool, base, out)
	}
	return r[0].(map[string]any)
}

func postTo(t testing.TB, url, body string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("POST %s: %d %q", url, resp.StatusCode, data)
	}
	return out
}

func errCode(r map[string]any) string {
	e, _ := r["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// TestInstances: two instances on one PostgreSQL share a request's budget,
// its stop, its approvals, its idempotency records and its stack.
func TestInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleet(t)
	csA, csB := f.mcp(0), f.mcp(1)
	cs := [2]*mcp.ClientSession{csA, csB}

	t.Run("budget", func(t *testing.T) {
		// A budget of 4 tool calls; the calls alternate a, b, a, b, ...
		budget := map[string]any{"reach/budget": map[string]any{"tool_calls": 4}}
		for i := range 6 {
			status, text, e := callMCP(t, cs[i%2], "r-budget", "up__count", map[string]any{"key": fmt.Sprintf("budget-%d", i)}, budget)
			if i < 4 && status != "success" {
				t.Fatalf("call %d on %s: %s %s", i, f.names[i%2], status, text)
			}
			if i >= 4 && (status != "refused" || e["code"] != "budget_tool_calls") {
				t.Fatalf("call %d on %s: %s %v %s; want refused, budget_tool_calls", i, f.names[i%2], status, e, text)
			}
		}
		for i := range 6 {
			if n := f.up.count(fmt.Sprintf("count budget-%d", i)); n != map[bool]int{true: 1, false: 0}[i < 4] {
				t.Errorf("call %d ran %d times", i, n)
			}
		}
	})

	t.Run("cancel", func(t *testing.T) {
		// A cancel sent to b stops the call running on a, and refuses the
		// next on either.
		lat := cancelAcross(t, f, csA, 0, 10)
		t.Logf("cancel through b of a call on a, over %d tries: to the upstream's cancellation p50 %s p99 %s; to the refusal of the next call p50 %s p99 %s",
			len(lat.upstream), pct(lat.upstream, 50), pct(lat.upstream, 99), pct(lat.refusal, 50), pct(lat.refusal, 99))
	})

	t.Run("approval", func(t *testing.T) {
		status, text, e := callMCP(t, csA, "r-approve", "up__wipe", map[string]any{"key": "w1"}, nil)
		if status != "pending" || e["code"] != "approval_pending" {
			t.Fatalf("a high-risk call on a: %s %s", status, text)
		}
		list := getJSONTB(t, f.base(1)+"/v1/approvals?status=pending")
		aps, _ := list["approvals"].([]any)
		if len(aps) != 1 {
			t.Fatalf("b lists %d pending approvals, want a's one: %v", len(aps), list)
		}
		id := aps[0].(map[string]any)["id"].(string)
		if out := postTo(t, f.base(1)+"/v1/approvals/"+id+"/approve", `{"reason":"fine"}`); out["status"] != "approved" {
			t.Fatalf("approving on b: %v", out)
		}
		if status, text, _ := callMCP(t, csA, "r-approve", "up__wipe", map[string]any{"key": "w1"}, nil); status != "success" {
			t.Fatalf("the repeated call on a: %s %s", status, text)
		}
		if status, text, _ := callMCP(t, csB, "r-approve", "up__wipe", map[string]any{"key": "w1"}, nil); status != "success" {
			t.Fatalf("the call repeated on b: %s %s", status, text)
		}
		if n := f.up.count("wipe w1"); n != 1 {
			t.Fatalf("the approved call ran %d times, want once", n)
		}
	})

	t.Run("idempotency", func(t *testing.T) {
		key := map[string]any{"reach/idempotency_key": "once-1"}
		status, first, _ := callMCP(t, csA, "r-idem-a", "up__count", map[string]any{"key": "idem"}, key)
		if status != "success" {
			t.Fatalf("the first call on a: %s %s", status, first)
		}
		status, again, _ := callMCP(t, csB, "r-idem-b", "up__count", map[string]any{"key": "idem"}, key)
		if status != "success" || !strings.HasPrefix(again, first) || !strings.Contains(again, "already made with the same idempotency key") || f.up.count("count idem") != 1 {
			t.Fatalf("the key replayed on b: %s %q, want a's result %q; the tool ran %d times, want once", status, again, first, f.up.count("count idem"))
		}
	})

	t.Run("cycle", func(t *testing.T) {
		r := callHTTP(t, f.base(0), "r-cycle", "h", "up__hop", `{"key":"x"}`, "")
		data := fmt.Sprint(r["data"])
		if r["status"] != "success" || !strings.Contains(data, "code:cycle") || !strings.Contains(data, "already on your call stack") {
			t.Fatalf("the hop a -> b with the same arguments: %v; want b to refuse a cycle", r)
		}
	})

	t.Run("audit", func(t *testing.T) {
		// Both instances appended to one chain, which verifies.
		pg, err := postgres.Open(t.Context(), f.url, &postgres.Options{NoMigrate: true})
		if err != nil {
			t.Fatal(err)
		}
		defer pg.Close()
		// The recorded events are committed with their batches, each
		// instance's on its own: read until they are there (a minute at
		// most), not a fixed 200 ms, which a loaded race build can spend
		// before the last batch commits.
		var rep *audit.Report
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			rep, err = audit.Verify(t.Context(), pg)
			if err != nil || rep.Events >= 20 || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || rep.Events < 20 {
			t.Fatalf("audit.Verify = %+v, %v", rep, err)
		}
		cmd := exec.Command(exe(t), "audit", "verify", "--store", f.url)
		cmd.Env = append(os.Environ(), "REACH_AS_CLI=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "chain ok: ") {
			t.Fatalf("reach audit verify --store: %v: %s", err, out)
		}
	})
}

// latencies are the measured times of cancelAcross.
type latencies struct{ upstream, refusal []time.Duration }

// cancelAcross starts a slow call on a (through cs) n times, cancels its
// request through b's API, and measures the time from the cancel to the
// upstream's cancellation, and to the refusal of the next call on a.
func cancelAcross(t testing.TB, f *fleet, cs *mcp.ClientSession, from, n int) latencies {
	var lat latencies
	for i := from; i < from+n; i++ {
		req := fmt.Sprintf("r-cancel-%d", i)
		done := make(chan string, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__slow", Arguments: map[string]any{"key": req},
				Meta: mcp.Meta{"reach/request": req}})
			if err != nil {
				done <- err.Error()
				return
			}
			s, _ := res.Meta["reach/status"].(string)
			done <- s
		}()
		select {
		case <-f.up.started:
		case <-time.After(30 * time.Second):
			t.Fatal("the slow call did not start")
		}
		t0 := time.Now()
		out := postTo(t, f.base(1)+"/v1/requests/"+req+"/cancel", `{"mode":"cancel","reason":"enough"}`)
		if out["state"] != "stopped_cancel" {
			t.Fatalf("cancel through b: %v", out)
		}
		r := callHTTP(t, f.base(0), req, "next", "up__count", fmt.Sprintf(`{"key":%q}`, req), "")
		refused := time.Since(t0)
		if code := errCode(r); !strings.HasPrefix(code, "stopped_") {
			t.Fatalf("the next call on a after the cancel: %v", r)
		}
		select {
		case at := <-f.up.stopped:
			lat.upstream = append(lat.upstream, at.Sub(t0))
		case <-time.After(30 * time.Second):
			t.Fatal("the upstream call on a was not cancelled")
		}
		if s := <-done; s != "cancelled" {
			t.Fatalf("the slow call on a ended %q, want cancelled", s)
		}
		lat.refusal = append(lat.refusal, refused)
	}
	return lat
}

// BenchmarkInstancesCancel measures a cancel across instances: a slow
// call runs on a; the cancel is sent to b (POST /v1/requests/{id}/cancel);
// the clock starts when it is sent. upstream is when the upstream saw its
// call cancelled, refusal when a's refusal of the request's next call
// came back. One try per iteration, so -benchtime 100x is 100 tries.
//
//	go test -run '^$' -bench InstancesCancel -benchtime 100x ./cmd/reach/
func BenchmarkInstancesCancel(b *testing.B) {
	f := newFleet(b)
	cs := f.mcp(0)
	var lat latencies
	i := 0
	for b.Loop() {
		l := cancelAcross(b, f, cs, i, 1)
		lat.upstream, lat.refusal = append(lat.upstream, l.upstream...), append(lat.refusal, l.refusal...)
		i++
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(pct(lat.upstream, 50)), "upstream-p50-ms")
	b.ReportMetric(ms(pct(lat.upstream, 99)), "upstream-p99-ms")
	b.ReportMetric(ms(pct(lat.refusal, 50)), "refusal-p50-ms")
	b.ReportMetric(ms(pct(lat.refusal, 99)), "refusal-p99-ms")
}

// pct returns the p-th percentile of ds.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)].Round(10 * time.Microsecond)
}

func getJSONTB(t testing.TB, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestInstancesKill: kill -9 one instance in the middle of a request: the
// other goes on with the request, refuses the retry of the call that was
// cut off (it may have run) instead of running it again, and undoes, once,
// the writes of a request that only the dead one ran; the dead one starts
// again under its name; nothing ran twice.
func TestInstancesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleet(t)
	// r-both runs on both: a booking on a, a call on b.
	if r := callHTTP(t, f.base(0), "r-both", "b1", "up__book", `{"key":"both"}`, ""); r["status"] != "success" {
		t.Fatalf("book on a: %v", r)
	}
	if r := callHTTP(t, f.base(1), "r-both", "c1", "up__count", `{"key":"both-1"}`, ""); r["status"] != "success" {
		t.Fatalf("count on b: %v", r)
	}
	// r-only runs on a only, with a booking its undo would cancel.
	if r := callHTTP(t, f.base(0), "r-only", "b1", "up__book", `{"key":"only"}`, ""); r["status"] != "success" {
		t.Fatalf("book on a: %v", r)
	}
	// A write of r-both holds on a; a is killed while it runs.
	go func() {
		defer func() { recover() }() // the call fails: its gateway dies
		body := `{"request_id":"r-both","tool_calls":[{"call_id":"h1","tool":"up__hold","arguments":{"key":"h1"},"idempotency_key":"hold-1"}]}`
		if resp, err := http.Post(f.base(0)+"/v1/calls", "application/json", strings.NewReader(body)); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-f.up.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the held call did not start")
	}
	f.kill(0)

	// The retry on b does not run it again: it is answered that it may
	// have run, once b knows a is dead (its heartbeat stopped).
	start := time.Now()
	r := callHTTP(t, f.base(1), "r-both", "h1", "up__hold", `{"key":"h1"}`, "hold-1")
	if r["status"] != "error" || errCode(r) != "interrupted" || f.up.count("hold h1") != 1 {
		t.Fatalf("the retry on b of the call cut off on a: %v; ran %d times", r, f.up.count("hold h1"))
	}
	t.Logf("the retry on b was answered %s after a was killed", time.Since(start).Round(time.Millisecond))
	// r-both goes on, on b.
	if r := callHTTP(t, f.base(1), "r-both", "c2", "up__count", `{"key":"both-2"}`, ""); r["status"] != "success" {
		t.Fatalf("r-both on b after a died: %v", r)
	}
	// r-only, which only a ran, is recovered by b: its booking undone, once.
	deadline := time.Now().Add(30 * time.Second)
	for f.up.count("unbook only") == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := f.up.count("unbook only"); n != 1 {
		t.Fatalf("the booking of the request only a ran was undone %d times, want once", n)
	}
	var got map[string]any
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = getJSONTB(t, f.base(1)+"/v1/requests/r-only"); got["state"] == "interrupted" {
			break
		}
	}
	if got["state"] != "interrupted" {
		t.Fatalf("r-only, seen on b: %v; want interrupted", got)
	}
	// a starts again under its name, and its recovery finds nothing more to do.
	f.start(0)
	time.Sleep(3 * time.Second) // a TTL and more: any recovery left would have run
	if r := callHTTP(t, f.base(0), "r-both", "c3", "up__count", `{"key":"both-3"}`, ""); r["status"] != "success" {
		t.Fatalf("r-both on a, started again: %v", r)
	}
	for what, want := range map[string]int{"book both": 1, "unbook both": 0, "book only": 1, "unbook only": 1, "hold h1": 1,
		"count both-1": 1, "count both-2": 1, "count both-3": 1} {
		if n := f.up.count(what); n != want {
			t.Errorf("%s ran %d times, want %d", what, n, want)
		}
	}
}

// TestInstancesDatabaseRestart: PostgreSQL restarted under load: every
// call gets an answer (a result, or a structured error while the database
// is down), none hangs, and both instances go on once it is back.
func TestInstancesDatabaseRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleet(t)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	var slowest time.Duration
	for w := range 4 {
		wg.Go(func() {
			client := &http.Client{Timeout: 45 * time.Second}
			for i := 0; !stop.Load(); i++ {
				body := fmt.Sprintf(`{"request_id":"w%d-%d","tool_calls":[{"call_id":"c","tool":"up__count","arguments":{"key":"w%d-%d"}}]}`, w, i, w, i)
				t0 := time.Now()
				resp, err := client.Post(f.base(w%2)+"/v1/calls", "application/json", strings.NewReader(body))
				d := time.Since(t0)
				outcome := ""
				if err != nil {
					outcome = "no answer: " + err.Error()
				} else {
					var out map[string]any
					json.NewDecoder(resp.Body).Decode(&out)
					resp.Body.Close()
					switch {
					case out["results"] != nil:
						r := out["results"].([]any)[0].(map[string]any)
						outcome = fmt.Sprint(r["status"])
						if c := errCode(r); c != "" {
							outcome += " " + c
						}
					case out["error"] != nil:
						outcome = fmt.Sprintf("%d %v", resp.StatusCode, out["error"].(map[string]any)["code"])
					default:
						outcome = fmt.Sprintf("%d unstructured", resp.StatusCode)
					}
				}
				mu.Lock()
				outcomes[outcome]++
				slowest = max(slowest, d)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	time.Sleep(time.Second)
	if err := f.pg.Restart(); err != nil {
		t.Fatal(err)
	}
	// Both instances go on: a new call succeeds on each within a while.
	for i := range 2 {
		deadline := time.Now().Add(45 * time.Second)
		for {
			r := callHTTP(t, f.base(i), fmt.Sprintf("after-%d-%d", i, time.Now().UnixNano()), "c", "up__count", fmt.Sprintf(`{"key":"after-%d-%d"}`, i, time.Now().UnixNano()), "")
			if r["status"] == "success" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %s did not go on after the database restarted: %v", f.names[i], r)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	t.Logf("outcomes under a database restart: %v; slowest answer %s", outcomes, slowest.Round(time.Millisecond))
	for o, n := range outcomes {
		if strings.HasPrefix(o, "no answer") || strings.Contains(o, "unstructured") {
			t.Errorf("%d calls got %q, want a result or a structured error", n, o)
		}
	}
	if outcomes["success"] == 0 {
		t.Error("no call succeeded")
	}
}

// exe is this test binary, which runs as the CLI with REACH_AS_CLI=1.
func exe(t testing.TB) string {
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// serveCmd is `reach serve` of this test binary (as the CLI) on addr, with
// the data folder data, the configuration cfg unless it is "", and env
// added to the environment.
func serveCmd(t testing.TB, cfg, addr, data string, env ...string) *exec.Cmd {
	args := []string{"serve", "--listen", addr, "--data", data}
	if cfg != "" {
		args = append(args, "--config", cfg)
	}
	cmd := exec.Command(exe(t), args...)
	cmd.Env = append(append(os.Environ(), "REACH_AS_CLI=1"), env...)
	return cmd
}

// startReach starts `reach serve` (this test binary as the CLI) and
// waits until it answers; its log is shown if the test fails.
func startReach(t testing.TB, cfg, addr, data string) *exec.Cmd {
	t.Helper()
	return startServeCmd(t, serveCmd(t, cfg, addr, data), addr)
}

// startServeCmd starts cmd, a `reach serve` listening on addr, as startReach
// does, and waits until it answers.
func startServeCmd(t testing.TB, cmd *exec.Cmd, addr string) *exec.Cmd {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), "serve-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A test that failed before it stopped the gateway leaves it
		// serving: it would hold connections open to the test's own
		// servers, whose Close then waits for them for ever.
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			if len(b) > 6000 {
				b = b[len(b)-6000:]
			}
			t.Logf("the log of reach serve on %s:\n%s", addr, b)
		}
	})
	for range 3000 {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return cmd
		}
		if cmd.ProcessState != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	b, _ := os.ReadFile(logf.Name())
	t.Fatalf("reach serve did not start on %s:\n%s", addr, b)
	return nil
}

// serving polls addr's /healthz every 10 ms, at most tries times, and
// reports whether it answered.
func serving(addr string, tries int) bool {
	for range tries {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// freeAddr returns a loopback address nobody listens on, for a reach serve
// started (and maybe killed and started again on it) later: below the
// kernel's ephemeral range, which any listener on port 0 or outbound
// connection of the tests running beside may take meanwhile (testport).
func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := testport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// A request that ran on both instances is ended by its client through a
// (POST /v1/requests/{id}/end: its sagas are settled); then b dies at once
// (kill -9), whether or not it ended its part. Nothing of the request is
// undone: the recovery of b's work ends it instead (issue 17, review).
func TestInstancesEndedThenKilled(t *testing.T) {
	f := newFleet(t)
	if r := callHTTP(t, f.base(1), "r-end", "b1", "up__book", `{"key":"eb"}`, ""); r["status"] != "success" {
		t.Fatalf("book on b: %v", r)
	}
	if r := callHTTP(t, f.base(0), "r-end", "c1", "up__count", `{"key":"ec"}`, ""); r["status"] != "success" {
		t.Fatalf("count on a: %v", r)
	}
	if code := f.end(0, "r-end"); code != 200 {
		t.Fatalf("end on a: %d", code)
	}
	f.kill(1)
	// Until the request is stored ended (by b's part ending, or by a's
	// recovery of b's work) or its booking undone.
	state, ended := f.awaitEnded("r-end", 30*time.Second, func() bool { return f.up.count("unbook eb") > 0 })
	time.Sleep(500 * time.Millisecond) // an undo under way lands
	if n := f.up.count("unbook eb"); n != 0 {
		t.Errorf("the client ended r-end, and its booking on b was undone %d times after b died", n)
	}
	if state != "ended" || !ended {
		t.Errorf("r-end is stored %s (ended: %v), want ended", state, ended)
	}
}

// A request that runs on b only is ended by its client through a: b ends
// its part (the request is stored ended) and nothing is undone; an id the
// store does not know is 404 (issue 17 review).
func TestInstancesEndAcross(t *testing.T) {
	f := newFleet(t)
	if r := callHTTP(t, f.base(1), "r-far", "b1", "up__book", `{"key":"fb"}`, ""); r["status"] != "success" {
		t.Fatalf("book on b: %v", r)
	}
	for id, want := range map[string]int{"r-far": 200, "r-none": 404} {
		if code := f.end(0, id); code != want {
			t.Fatalf("end %s on a: %d, want %d", id, code, want)
		}
	}
	state, ended := f.awaitEnded("r-far", 10*time.Second, nil)
	if state != "ended" || !ended {
		t.Fatalf("r-far is stored %s (ended: %v): b did not end its part", state, ended)
	}
	if n := f.up.count("unbook fb"); n != 0 {
		t.Errorf("the booking of an ended request was undone %d times", n)
	}
}
