package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
)

// TestFence19FrozenInstance: instance b is frozen (stopped as a VM pause
// or a long stall would stop it) just after it admitted a call, before it
// dispatched it, while another call of another request of its runs
// upstream. a takes b for dead a TTL later, recovers its requests and
// forgets it. When b goes on, it must not act on the lease it lost: the
// held call is not dispatched (the upstream never sees it), its running
// request's part stops, and the audit says why; its heartbeats do not make
// it alive again.
func TestFence19FrozenInstance(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, owner := freezeB(t, func(f *fleet) { f.start(0) }, "a")
	for _, l := range f.lives(t) {
		if l.Owner == owner && l.Alive {
			t.Fatalf("b's life %s is alive again after it was forgotten: %+v", owner, l)
		}
	}
	// Its probes say so: /livez asks for a restart (a supervisor restarts
	// it), /readyz sends it no traffic; a's stay 200.
	for _, probe := range []string{"/livez", "/readyz"} {
		resp, err := http.Get(f.base(1) + probe)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "restart reach serve") {
			t.Errorf("b's %s, taken for dead: %d %s; want 503 saying to restart it", probe, resp.StatusCode, body)
		}
		if resp, err := http.Get(f.base(0) + probe); err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("a's %s: %v %v; want 200", probe, resp, err)
		} else {
			resp.Body.Close()
		}
	}
	// The audit says why r-held's call did not run. Its event is recorded
	// off the call path (queued, committed by b's writer after the
	// answer): the audit is read until it is there, a minute at most.
	var out []byte
	refused := false
	for deadline := time.Now().Add(time.Minute); !refused && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		cmd := exec.Command(exe(t), "audit", "show", "r-held", "--store", f.url)
		cmd.Env = append(os.Environ(), "REACH_AS_CLI=1")
		var err error
		if out, err = cmd.CombinedOutput(); err != nil && !strings.Contains(string(out), "no audit events for request r-held") {
			t.Fatalf("reach audit show r-held: %v\n%s", err, out)
		}
		// Its refusal is instance_stopping, or store_unavailable when the
		// lease lapsed first (which of the two depends on the order b
		// finds them in); the table cuts the text, so the decision's code
		// is what it shows.
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "gate__gate") && strings.Contains(line, "refused") &&
				(strings.Contains(line, "admit/instance_stopping") || strings.Contains(line, "admit/store_unavailable")) {
				refused = true
			}
		}
	}
	if !refused {
		t.Errorf("the audit of r-held does not say why its call did not run, a minute after its answer:\n%s", out)
	}
	if r := callHTTP(t, f.base(0), "r-new", "c", "up__count", `{"key":"new"}`, ""); r["status"] != "success" {
		t.Errorf("a call on a after b froze: %v", r)
	}
}

// freezeB runs the fence tests' outage: a (started by startA) and b on one
// PostgreSQL (instance_ttl 2s), b frozen just after it admitted a call,
// before it dispatched it, while a call of another request of its runs
// upstream; a (named so in the failures) takes b for dead, recovers its
// requests and forgets it. It checks that b, once it goes on, dispatches
// neither call, and admits no new work.
func freezeB(t *testing.T, startA func(f *fleet), a string) (f *fleet, owner string) {
	t.Helper()
	f, g := gateFleetOf(t, "a", "b")
	startA(f)
	// b stops itself (SIGSTOP) at the second call it admits, r-held's, and
	// goes on from there when continued.
	var reached <-chan struct{}
	f.cmd[1], reached = startReachAt(t, f.cfg[1], f.addr[1], f.data[1], "budget.admitted#2+go")
	stopped := false
	t.Cleanup(func() {
		if stopped {
			f.cmd[1].Process.Signal(syscall.SIGCONT)
		}
		for i := range 2 {
			f.stop(i)
		}
	})
	owner = f.lifeOf(t, "b")
	running := gateOn(t, f, g, 1, "r-run", "run")
	held := retryOn(t, f, 1, "r-held", "held")
	select {
	case <-reached:
		stopped = true
	case r := <-held:
		t.Fatalf("r-held's call on b answered before b stopped at its admission: %v", r)
	case <-time.After(time.Minute):
		t.Fatal("b did not reach the crash point of r-held's call")
	}
	// a takes b for dead, recovers its requests, and forgets it.
	f.awaitForgotten(t, owner)
	for _, id := range []string{"r-run", "r-held"} {
		if r := storedRequest(t, f.url, id); r == nil || r.State != "interrupted" {
			t.Fatalf("request %s once %s recovered b's work: %+v; want interrupted", id, a, r)
		}
	}
	if err := f.cmd[1].Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	r := <-held
	if c := errCode(r); c != "instance_stopping" && c != "store_unavailable" {
		t.Errorf("r-held's call, admitted before b froze, once b went on: %v; want refused (instance_stopping or store_unavailable)", r)
	}
	if n := g.count("held"); n != 0 {
		t.Fatalf("r-held's call was dispatched %d times by b after %s recovered its request", n, a)
	}
	// r-run's part on b stops: its call ends without success.
	if r := <-running; r["status"] == "success" {
		t.Errorf("r-run's call on b succeeded after %s recovered its request: %v", a, r)
	}
	// b, resumed, finds it was taken for dead: it admits no new work
	// (until restarted), and does not come back to life under its old name.
	// Each look is a new request: one that b began before it found out
	// (its call refused store_unavailable, its lease lapsed) is among the
	// parts b stops then (stopped_isolate), and a call naming it again is
	// refused as stopped, before b's own state is looked at.
	var seen []string
	deadline := time.Now().Add(time.Minute)
	for i := 0; ; i++ {
		r := callHTTP(t, f.base(1), fmt.Sprint("r-after-", i), "c", "up__count", fmt.Sprintf(`{"key":"after-%d"}`, i), "")
		if errCode(r) == "instance_stopping" {
			break
		}
		if r["status"] == "success" {
			t.Fatalf("b ran a new call after it was taken for dead: %v", r)
		}
		seen = append(seen, errCode(r))
		if time.Now().After(deadline) {
			t.Fatalf("b, taken for dead, still does not refuse new work: %v (refused before: %v)", r, seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return f, owner
}

// gateFleetOf is two instances named a and b on one throwaway PostgreSQL
// (instance_ttl 2s), not started, with the shared upstream and a gate
// upstream, whose gates it returns.
func gateFleetOf(t *testing.T, a, b string) (*fleet, *gates) {
	t.Helper()
	f := &fleet{t: t, pg: pgtest.Own(t), names: [2]string{a, b}}
	var err error
	if f.url, err = f.pg.CreateDatabase(context.Background(), "reach"); err != nil {
		t.Fatal(err)
	}
	var upURL string
	f.up, upURL = sharedUpstream(t)
	g, gateURL := gateUpstream(t)
	for i := range 2 {
		f.addr[i], f.data[i] = freeAddr(t), t.TempDir()
		f.cfg[i] = writeConfig(t, fmt.Sprintf(`store: %s
instance: %s
instance_ttl: 2s
upstreams:
  - {name: up, url: '%s'}
  - {name: gate, url: '%s'}
budgets:
  default: {tool_calls: 100000, wall: 1h}
`, f.url, f.names[i], upURL, gateURL))
	}
	return f, g
}
