package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

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
// with no pin file (a wrong --data, or a gateway without upstreams) say so
// and how to fix it. Listing is no failure (a gateway without upstreams
// pins nothing): it says where it looked; diff and approve fail.
func TestToolsCommandNamesMissingPins(t *testing.T) {
	data := filepath.Join(t.TempDir(), "not-the-data-folder")
	for _, args := range [][]string{{"list"}, {"list", "--held"}} {
		out, _, err := runCmd(t, newToolsCmd, append(args, "--data", data)...)
		if err != nil || !strings.Contains(out, data) || !strings.Contains(out, "--data") {
			t.Errorf("tools %s with no pins.json: err %v, out %q; want no error and a line naming %s and --data", strings.Join(args, " "), err, out, data)
		}
	}
	if out, _, err := runCmd(t, newToolsCmd, "list", "--json", "--data", data); err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("tools list --json with no pins.json: %v %q, want []", err, out)
	}
	for _, args := range [][]string{{"diff"}, {"approve", "kb__search"}} {
		out, _, err := runCmd(t, newToolsCmd, append(args, "--data", data)...)
		if err == nil || !strings.Contains(err.Error(), data) || !strings.Contains(err.Error(), "--data") {
			t.Errorf("tools %s with no pins.json: err %v, out %q; want an error naming %s and --data", strings.Join(args, " "), err, out, data)
		}
	}
}

// TestRequestsListFilters: requests list takes --state, --limit and
// --json, against a running gateway; the table shows the live state,
// refusals and cost.
func TestRequestsListFilters(t *testing.T) {
	base, _, _ := startServe(t, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	for i := range 3 {
		getJSON(t, "POST", base+"/v1/calls", fmt.Sprintf(`{"request_id":"r%d","tool_calls":[{"call_id":"c","tool":"search_kb","arguments":{"query":"q%d"}}]}`, i, i))
	}
	getJSON(t, "POST", base+"/v1/calls", `{"request_id":"r9","tool_calls":[{"call_id":"c","tool":"nope","arguments":{}}]}`)
	getJSON(t, "POST", base+"/v1/requests/r0/end", `{}`)
	out, _, err := runCmd(t, newRequests, "list", "--api", base)
	if err != nil || !strings.Contains(out, "REFUSED") || !regexp.MustCompile(`(?m)^r9\s+idle\s+local\s+\S+\s+-\s+\S+\s+1\s+1\s`).MatchString(out) {
		t.Errorf("requests list: %v\n%s", err, out)
	}
	out, _, err = runCmd(t, newRequests, "list", "--api", base, "--state", "done", "--json")
	var got struct {
		Requests []struct{ ID, Activity string }
	}
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || len(got.Requests) != 1 || got.Requests[0].ID != "r0" || got.Requests[0].Activity != "done" {
		t.Errorf("requests list --state done --json: %v\n%s", err, out)
	}
	out, _, err = runCmd(t, newRequests, "--api", base, "--state", "idle", "--limit", "2", "--json")
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || len(got.Requests) != 2 {
		t.Errorf("requests --state idle --limit 2: %v\n%s", err, out)
	}
	if _, _, err := runCmd(t, newRequests, "list", "--api", base, "--state", "sleeping"); err == nil || !strings.Contains(err.Error(), "waiting_for_approval") {
		t.Errorf("an unknown state: %v, want the states named", err)
	}
}

// TestRequestsListTree: the table names each request's agent and, for a
// sub-request (a hand-off to an agent), its parent, so that the tree of a
// run of agents reads from it and the request to stop is found.
func TestRequestsListTree(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"requests":[
{"id":"req_sub","state":"running","activity":"running","principal":"local","agent":"executor","parent":"req_root","started":"2026-12-05T03:40:23Z","tool_calls":20},
{"id":"req_root","state":"running","activity":"running","principal":"local","agent":"a2a-client","started":"2026-12-05T03:40:22Z","tool_calls":58}]}`)
	}))
	defer srv.Close()
	out, _, err := runCmd(t, newRequests, "list", "--api", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^ID\s+STATE\s+PRINCIPAL\s+AGENT\s+PARENT\s+STARTED`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^req_sub\s+running\s+local\s+executor\s+req_root\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^req_root\s+running\s+local\s+a2a-client\s+-\s`).MatchString(out) {
		t.Errorf("requests list:\n%s", out)
	}
}

// TestGraphNotToTerminal: reach graph does not write an SVG to a terminal
// without -o; it says how to get it, and -o - writes it anyway.
func TestGraphNotToTerminal(t *testing.T) {
	base, _, _ := startServe(t, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	getJSON(t, "POST", base+"/v1/calls", `{"request_id":"g1","tool_calls":[{"call_id":"c","tool":"search_kb","arguments":{"query":"q"}}]}`)
	old := isTerminal
	isTerminal = func(io.Writer) bool { return true }
	defer func() { isTerminal = old }()
	out, _, err := runCmd(t, newGraph, "g1", "--api", base)
	if err == nil || !strings.Contains(err.Error(), "-o g1.svg") || out != "" {
		t.Errorf("graph to a terminal: %v, %d bytes written", err, len(out))
	}
	if out, _, err := runCmd(t, newGraph, "g1", "--api", base, "--format", "dot"); err != nil || !strings.HasPrefix(out, "digraph") {
		t.Errorf("graph --format dot to a terminal: %v %q", err, out)
	}
	if out, _, err := runCmd(t, newGraph, "g1", "--api", base, "-o", "-"); err != nil || !strings.HasPrefix(out, "<svg") {
		t.Errorf("graph -o - to a terminal: %v %.40q", err, out)
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
	addr := freeAddr(t)
	var stdout strings.Builder
	cmd := serveCmd(t, "", addr, t.TempDir())
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !serving(addr, 1000) {
		cmd.Process.Kill()
		t.Fatal("reach serve did not start")
	}
	if err := stopServe(t, cmd, syscall.SIGTERM); err != nil {
		t.Errorf("reach serve after SIGTERM: %v, want a graceful exit 0", err)
	}
	if !strings.Contains(stdout.String(), "reach stopped") {
		t.Errorf("no shutdown line after SIGTERM:\n%s", stdout.String())
	}
}

// TestBannerHintsAreCommands: the banner's hints for watching and steering
// the gateway name reach's commands, not HTTP routes, and each of them, run
// as printed (REQUEST a request's id), works against the gateway that
// printed it.
func TestBannerHintsAreCommands(t *testing.T) {
	base, _, stdout := startServe(t, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	getJSON(t, "POST", base+"/v1/calls", `{"request_id":"b1","tool_calls":[{"call_id":"c","tool":"search_kb","arguments":{"query":"q"}}]}`)
	banner := stdout.String()
	_, after, ok := strings.Cut(banner, "Watch and steer it:\n")
	if !ok {
		t.Fatalf("the banner has no hints for watching the gateway:\n%s", banner)
	}
	line, _, _ := strings.Cut(after, "\n")
	hints := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
	if len(hints) < 3 {
		t.Fatalf("hints %q, want requests, approvals and graph", hints)
	}
	if !strings.Contains(banner, "export REACH_API="+base+" once") {
		t.Errorf("the banner of a gateway on another address does not offer REACH_API:\n%s", banner)
	}
	if strings.Contains(banner, "/v1/requests") || strings.Contains(banner, "/v1/approvals") {
		t.Errorf("the banner names HTTP routes:\n%s", banner)
	}
	out := filepath.Join(t.TempDir(), "graph.svg")
	for _, h := range hints {
		args := strings.Fields(strings.ReplaceAll(h, "REQUEST", "b1"))
		if args[0] != "reach" {
			t.Errorf("hint %q is not a reach command", h)
			continue
		}
		for i := range args {
			if args[i] == "graph.svg" {
				args[i] = out
			}
		}
		var o, e bytes.Buffer
		if err := run(t.Context(), args[1:], &o, &e); err != nil {
			t.Errorf("%s: %v\n%s", h, err, e.String())
		}
	}
	if b, err := os.ReadFile(out); err != nil || !bytes.HasPrefix(b, []byte("<svg")) {
		t.Errorf("the graph hint wrote %.40q (%v), want the request's SVG", b, err)
	}
}

// TestDemoJSON: reach demo --json prints the scenarios it ran as one JSON
// object, each with what it reproduces, both outcomes, the tokens, whether
// reach behaved as described, its request and the graph it wrote, and
// nothing else; with --serve it is refused, saying what to run instead.
func TestDemoJSON(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"demo", "--json", "--out", dir}, &out, &errOut); err != nil {
		t.Fatalf("demo --json: %v\n%s", err, errOut.String())
	}
	var got struct {
		Scenarios []struct {
			Name, Request, Graph string
			TokensWithout        int64 `json:"tokens_without"`
			TokensWith           int64 `json:"tokens_with"`
			TokensSaved          int64 `json:"tokens_saved"`
			OK                   bool
		}
	}
	printed := out.Bytes()
	var fields map[string][]map[string]any
	dec := json.NewDecoder(bytes.NewReader(printed))
	if err := dec.Decode(&fields); err != nil {
		t.Fatalf("demo --json printed no JSON object: %v\n%s", err, printed)
	}
	if rest, _ := io.ReadAll(bytes.NewReader(printed[dec.InputOffset():])); strings.TrimSpace(string(rest)) != "" {
		t.Errorf("demo --json printed more than one JSON object: %q", rest)
	}
	if err := json.Unmarshal(printed, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Scenarios) < 5 {
		t.Fatalf("%d scenarios, want every one the demo runs", len(got.Scenarios))
	}
	for i, s := range got.Scenarios {
		for _, k := range []string{"name", "reproduces", "without_reach", "with_reach", "tokens_without", "tokens_with", "tokens_saved", "ok", "request", "graph"} {
			if _, ok := fields["scenarios"][i][k]; !ok {
				t.Errorf("scenario %d lacks %q", i, k)
			}
		}
		if !s.OK || s.Request == "" || s.TokensSaved != s.TokensWithout-s.TokensWith {
			t.Errorf("scenario %+v", s)
		}
		if b, err := os.ReadFile(s.Graph); err != nil || !bytes.HasPrefix(b, []byte("<svg")) {
			t.Errorf("%s: graph %s: %v", s.Name, s.Graph, err)
		}
	}
	err := run(t.Context(), []string{"demo", "--json", "--serve", "--out", dir}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "reach demo --serve") {
		t.Errorf("demo --json --serve: %v, want a refusal that says what to run", err)
	}
}

// TestValidateJSON: reach validate --json prints one JSON object with the
// tools it would serve and its warnings, or, when the check fails, the
// error with its line (and exits non-zero).
func TestValidateJSON(t *testing.T) {
	var out bytes.Buffer
	good := writeConfig(t, "examples: true\n")
	if err := run(t.Context(), []string{"validate", "--offline", "--json", "--config", good}, &out, io.Discard); err != nil {
		t.Fatalf("validate --json: %v", err)
	}
	type report struct {
		Config            string
		OK                bool
		Tools, Warnings   []string
		Upstreams, Agents int
		Offline           bool
		Error             string
	}
	var got report
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("validate --json printed %q: %v", out.String(), err)
	}
	if got.Config != good || !got.OK || !got.Offline || !slices.Contains(got.Tools, "get_order") || got.Warnings == nil {
		t.Errorf("validate --json = %+v, want ok with the example tools", got)
	}
	out.Reset()
	bad := writeConfig(t, "examples: true\nupstrems: []\n")
	err := run(t.Context(), []string{"validate", "--offline", "--json", "--config", bad}, &out, io.Discard)
	got = report{}
	if jerr := json.Unmarshal(out.Bytes(), &got); err == nil || jerr != nil || got.OK || !strings.Contains(got.Error, "line 2") || !strings.Contains(got.Error, "did you mean upstreams?") {
		t.Errorf("validate --json of a bad configuration: %v, printed %q", err, out.String())
	}
}

// TestErrorHintsNameCommands: what the CLI prints when the gateway finds no
// such request or approval names the command that lists them.
func TestErrorHintsNameCommands(t *testing.T) {
	base, _, _ := startServe(t, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"requests", "show", "nosuch", "--api", base}, "reach requests list"},
		{[]string{"requests", "cancel", "nosuch", "--api", base}, "reach requests list"},
		{[]string{"approvals", "approve", "nosuch", "--api", base}, "reach approvals list"},
	} {
		err := run(t.Context(), c.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("reach %s: %v, want a hint naming %s", strings.Join(c.args[:3], " "), err, c.want)
		}
	}
}

// TestUnknownSubcommand: a word that names no subcommand of a group is an
// error that says which it may mean, whether the group runs something
// itself or not; a group that runs nothing printed its help and exited 0
// (reach approvals aprove ID passed for done in a script).
func TestUnknownSubcommand(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"approvals aprove apr_1", "unknown command \"aprove\" for \"reach approvals\"\n\nDid you mean this?\n\tapprove"},
		{"audit verfy", "Did you mean this?\n\tverify"},
		{"requests lst", "Did you mean this?\n\tlist"},
		{"requests stop req_1", "Did you mean this?\n\tcancel"}, // it offered show alone
		{"keys rotate", "unknown command \"rotate\" for \"reach keys\""},
	} {
		var out strings.Builder
		err := run(context.Background(), strings.Fields(tc.args), &out, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("reach %s: %v (printed %.80q), want an error with %q", tc.args, err, out.String(), tc.want)
		}
	}
	var out strings.Builder
	if err := run(context.Background(), []string{"audit"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "Available Commands:") {
		t.Errorf("reach audit: %v, want its help:\n%s", err, out.String())
	}
}

// TestWrongArgsShowUsage: a command given too few or too many arguments
// says what it takes: `reach graph` alone said "accepts 1 arg(s),
// received 0" and nothing of the request it wanted.
func TestWrongArgsShowUsage(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"graph", "accepts 1 arg(s), received 0; usage: reach graph REQUEST"},
		{"requests show", "usage: reach requests show ID"},
		{"approvals approve", "usage: reach approvals approve"},
		{"requests cancel a b", "accepts 1 arg(s), received 2; usage: reach requests cancel ID"},
		{"requests lst", "Did you mean this?\n\tlist"},
	} {
		err := run(context.Background(), strings.Fields(tc.args), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("reach %s: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// TestDemoOutUnwritable: reach demo in a read-only working directory (a
// container's) ended with "mkdir reach-demo: permission denied" after
// running every scenario; the error names --out.
func TestDemoOutUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"demo", "--out", filepath.Join(file, "graphs")}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "--out") {
		t.Fatalf("demo with a folder it cannot make: %v, want an error that names --out", err)
	}
}

// TestKeysCreateUnwritable: reach keys create in a read-only working
// directory (a container's) said "writing keys: mkdir .reach: permission
// denied"; the error names --data.
func TestKeysCreateUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"keys", "create", "--principal", "alice", "--data", filepath.Join(file, ".reach")}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "--data") {
		t.Fatalf("keys create in a folder it cannot make: %v, want an error that names --data", err)
	}
	if out.Len() != 0 {
		t.Errorf("a key was printed though none was kept: %q", out.String())
	}
}
