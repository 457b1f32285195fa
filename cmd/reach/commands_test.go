package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/gateway"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// TestBenchLoopsStrictWithJSON: --strict holds with --json too: a run
// below the bar exits non-zero whatever the output format.
func TestBenchLoopsStrictWithJSON(t *testing.T) {
	dir := t.TempDir()
	// A loop reach does not flag (the result changes every time, so it is
	// polling to reach) labelled as a loop: detection 0.
	trace := `{"id": "missed", "tools": {"job_status": {"access": "read", "reentrancy": "reentrant"}},
 "events": [
  {"id": "e1", "parent": null, "type": "model", "tokens": 100},
  {"id": "e2", "parent": "e1", "type": "tool_call", "tool": "job_status", "args": {"job": "j"}, "status": "ok", "result": {"progress": 10}},
  {"id": "e3", "parent": null, "type": "model", "tokens": 100},
  {"id": "e4", "parent": "e3", "type": "tool_call", "tool": "job_status", "args": {"job": "j"}, "status": "ok", "result": {"progress": 40}}
 ],
 "label": {"loop": true, "kind": "consecutive_repeat", "earliest": "e4", "onset": "e4"}}`
	if err := os.WriteFile(filepath.Join(dir, "missed.json"), []byte(trace), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"bench", "loops", "--strict", dir}, io.Discard, io.Discard); err == nil {
		t.Fatal("the trace is not below the bar; the test needs one that is")
	}
	var out strings.Builder
	err := run(context.Background(), []string{"bench", "loops", "--json", "--strict", dir}, &out, io.Discard)
	if err == nil {
		t.Errorf("bench loops --json --strict below the bar: no error, want one (stdout %q)", out.String())
	}
	if !strings.Contains(out.String(), `"id":"missed"`) {
		t.Errorf("bench loops --json --strict: stdout %q, want the JSON lines", out.String())
	}
}

// TestBenchLoopsMinDetection: --min-detection moves the bar of --strict:
// a set with one loop of two detected passes at 0.5 and fails at the
// default (0.95); a false kill fails at any bar.
func TestBenchLoopsMinDetection(t *testing.T) {
	dir := t.TempDir()
	missed := `{"id": "missed", "tools": {"job_status": {"access": "read", "reentrancy": "reentrant"}},
 "events": [
  {"id": "e1", "parent": null, "type": "model", "tokens": 100},
  {"id": "e2", "parent": "e1", "type": "tool_call", "tool": "job_status", "args": {"job": "j"}, "status": "ok", "result": {"progress": 10}}
 ],
 "label": {"loop": true, "kind": "consecutive_repeat", "earliest": "e2", "onset": "e2"}}`
	var events []string
	for i := 1; i <= 3; i++ {
		events = append(events, `{"id": "m`+string(rune('0'+i))+`", "parent": null, "type": "model", "tokens": 100}`,
			`{"id": "c`+string(rune('0'+i))+`", "parent": "m`+string(rune('0'+i))+`", "type": "tool_call", "tool": "get_order", "args": {"id": "7"}, "status": "ok", "result": {"state": "open"}}`)
	}
	caught := `{"id": "caught", "tools": {"get_order": {"access": "read", "reentrancy": "reentrant"}}, "events": [` +
		strings.Join(events, ",") + `], "label": {"loop": true, "kind": "consecutive_repeat", "earliest": "c3", "onset": "c3"}}`
	for name, trace := range map[string]string{"missed.json": missed, "caught.json": caught} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(trace), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(context.Background(), []string{"bench", "loops", "--strict", dir}, io.Discard, io.Discard); err == nil {
		t.Error("detection 0.50 passed --strict at the default bar")
	}
	if err := run(context.Background(), []string{"bench", "loops", "--strict", "--min-detection", "0.5", dir}, io.Discard, io.Discard); err != nil {
		t.Errorf("detection 0.50 failed --strict --min-detection 0.5: %v", err)
	}
	// The same trace labelled legit: its refusal is a false kill, which
	// fails whatever the bar.
	legit := strings.Replace(caught, `"label": {"loop": true, "kind": "consecutive_repeat", "earliest": "c3", "onset": "c3"}`, `"label": {"loop": false, "kind": "polling"}`, 1)
	if err := os.WriteFile(filepath.Join(dir, "caught.json"), []byte(legit), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"bench", "loops", "--strict", "--min-detection", "0", dir}, io.Discard, io.Discard); err == nil {
		t.Error("a false kill passed --strict --min-detection 0")
	}
}

// TestDemoServeKeepsState: `reach demo --serve` without --data keeps its
// state (store, audit log) in ./.reach, as its --data help and its banner
// say, like `reach serve` without a configuration.
func TestDemoServeKeepsState(t *testing.T) {
	t.Chdir(t.TempDir())
	base, stop, stdout := startCmd(t, "demo", "--serve", "--listen", "127.0.0.1:0", "--out", t.TempDir())
	getJSON(t, "POST", base+"/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"get_order","arguments":{"order_id":"1001"}}]}`)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "data      ") || !strings.Contains(stdout.String(), ".reach\n") {
		t.Errorf("banner does not name .reach as the data folder:\n%s", stdout.String())
	}
	if _, err := os.Stat(filepath.Join(".reach", sqlite.DefaultFile)); err != nil {
		t.Errorf("demo --serve kept no store in .reach: %v", err)
	}
}

// TestToolsCommandNamesMissingPins: the tools commands pointed at a folder
// with no pin file (a wrong --data: the gateway's data folder is next to
// its configuration) say so and how to fix it, instead of answering that
// no tool is pinned or held.
func TestToolsCommandNamesMissingPins(t *testing.T) {
	data := filepath.Join(t.TempDir(), "not-the-data-folder")
	for _, args := range [][]string{{"list"}, {"list", "--held"}, {"diff"}, {"approve", "kb__search"}} {
		out, _, err := runCmd(t, newToolsCmd, append(args, "--data", data)...)
		if err == nil || !strings.Contains(err.Error(), data) || !strings.Contains(err.Error(), "--data") {
			t.Errorf("tools %s with no pins.json: err %v, out %q; want an error naming %s and --data", strings.Join(args, " "), err, out, data)
		}
	}
}

// TestBannerAndValidateLeaveOutForbiddenTools: a tool configured forbidden
// is neither listed nor callable; the banner and validate do not count it
// as served, nor offer it as the example call.
func TestBannerAndValidateLeaveOutForbiddenTools(t *testing.T) {
	yaml := "tools:\n  get_order: {access: forbidden}\n  refund_order: {access: forbidden}\n"
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Data = t.TempDir()
	g, err := gateway.New(t.Context(), cfg, &gateway.Options{Offline: true, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var b strings.Builder
	printBanner(&b, g, "127.0.0.1:7400", cfg.Data)
	out := b.String()
	if !strings.Contains(out, "reach is serving 2 tools") || strings.Contains(out, "get_order") || strings.Contains(out, "refund_order") {
		t.Errorf("banner with get_order and refund_order forbidden:\n%s\nwant 2 tools served, neither forbidden one named", out)
	}

	var vout strings.Builder
	if err := run(context.Background(), []string{"validate", "--offline", "--config", writeConfig(t, yaml)}, &vout, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(vout.String(), "ok, 2 tools") {
		t.Errorf("validate: %q, want ok, 2 tools", vout.String())
	}
}

// TestErrorsPrintedEscaped: an error that quotes an upstream (here its
// answer to initialize) cannot clear or rewrite the operator's terminal
// when the command prints it.
func TestErrorsPrintedEscaped(t *testing.T) {
	reply := `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"\u001b[2J\u001b[1;1Hall good"}}`
	config := "upstreams:\n  - name: evil\n    command: [sh, -c, 'read l; printf \"%s\\n\" \"$REPLY_JSON\"; sleep 1']\n    env: {REPLY_JSON: '" + reply + "'}\n"
	err := run(context.Background(), []string{"validate", "--config", writeConfig(t, config)}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "\x1b[2J") {
		t.Fatalf("validate: %v; the test needs the upstream's text in the error", err)
	}
	var b strings.Builder
	printError(&b, err)
	if out := b.String(); strings.ContainsAny(out, "\x1b") || !strings.HasPrefix(out, "reach: ") || !strings.Contains(out, `\x1b[2J`) {
		t.Errorf("printed %q; want it after reach: with the escape shown as \\x1b", out)
	}
}

// TestServeAddressInUse: serve on an address already taken says what to
// do: pick another one with --listen.
func TestServeAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = run(context.Background(), []string{"serve", "--listen", ln.Addr().String(), "--data", t.TempDir()}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "--listen") {
		t.Errorf("serve on a taken address: %v, want an error naming it and --listen", err)
	}
}

// TestValidateShowsUpstreamStderr: when a stdio upstream fails to start,
// validate shows what it wrote to stderr (the reason, as serve logs it),
// secrets masked, not only "EOF".
func TestValidateShowsUpstreamStderr(t *testing.T) {
	t.Setenv("REVIEW2_TOKEN", "tok-0123456789")
	config := "upstreams:\n  - name: broken\n    command: [sh, -c, 'echo \"Error: cannot find module ./server.js (token $TOKEN)\" >&2; exit 1']\n    env: {TOKEN: '${REVIEW2_TOKEN}'}\n"
	var stdout, stderr strings.Builder
	err := run(context.Background(), []string{"validate", "--config", writeConfig(t, config)}, &stdout, &stderr)
	if err == nil {
		t.Fatal("validate succeeded")
	}
	all := err.Error() + stdout.String() + stderr.String()
	if !strings.Contains(all, "cannot find module ./server.js") {
		t.Errorf("validate: err %v, stderr %q: want the upstream's stderr", err, stderr.String())
	}
	if strings.Contains(all, "tok-0123456789") {
		t.Errorf("validate shows the secret: %s", all)
	}
}

// TestServeStopsGracefullyOnSIGTERM: a supervisor (systemd, docker stop,
// Kubernetes) stops `reach serve` with SIGTERM; it shuts down as on
// Ctrl-C, and exits 0, rather than dying mid-call.
func TestServeStopsGracefullyOnSIGTERM(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM to send on Windows")
	}
	addr := freePort(t)
	exe, _ := os.Executable()
	var stdout strings.Builder
	cmd := exec.Command(exe, "serve", "--listen", addr, "--data", t.TempDir())
	cmd.Env = append(os.Environ(), "REACH_AS_CLI=1")
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	up := false
	for range 1000 {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			up = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !up {
		cmd.Process.Kill()
		t.Fatal("reach serve did not start")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("reach serve after SIGTERM: %v, want a graceful exit 0", err)
	}
	if !strings.Contains(stdout.String(), "reach stopped") {
		t.Errorf("no shutdown line after SIGTERM:\n%s", stdout.String())
	}
}
