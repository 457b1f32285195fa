package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/atomicfile"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltracev1 "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The tests of this file drive the real parts end to end: `reach serve`
// (this test binary as the CLI, in a process of its own), an upstream MCP
// server written on the TypeScript SDK's McpServer over stdio
// (testdata/fw33b-kv.mjs), the TypeScript SDK's client over Streamable HTTP
// (testdata/fw33b-driver.mjs, driven a command at a time so that the test
// can act between two calls of one connected client), the CLI as a process
// beside the server, Prometheus's own text parser, and an OTLP/HTTP
// receiver decoding with the official protobuf types.

// fw33bKit is a folder with the two scripts beside a link to the
// frameworks cache's node_modules (the TypeScript SDK 1.x, zod, Node 22):
// nothing is written into the cache.
type fw33bKit struct{ dir, node string }

func newFW33bKit(t *testing.T) *fw33bKit {
	t.Helper()
	cache, node := nodeSDK(t)
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(cache, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fw33b-kv.mjs", "fw33b-driver.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return &fw33bKit{dir: dir, node: node}
}

// upstream is the configuration's upstreams section: the kv server, with
// its note tool pulled (its description changed) or not.
func (k *fw33bKit) upstream(pulled bool) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	arg := "first"
	if pulled {
		arg = "pulled"
	}
	return fmt.Sprintf("upstreams:\n  - name: kv\n    command: [%s, %s, %s]\n", q(k.node), q(filepath.Join(k.dir, "fw33b-kv.mjs")), arg)
}

// fw33bServer is a `reach serve` process.
type fw33bServer struct {
	base   string
	cmd    *exec.Cmd
	log    *lockedBuffer
	exited chan struct{}
}

// serve starts `reach serve` with the configuration file cfg and the data
// folder data, env added, and waits until it answers.
func (k *fw33bKit) serve(t *testing.T, cfg, data string, env ...string) *fw33bServer {
	t.Helper()
	addr := freeAddr(t)
	s := &fw33bServer{base: "http://" + addr, cmd: serveCmd(t, cfg, addr, data, env...), log: &lockedBuffer{}}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	s.exited = exited
	go func() { s.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("the log of reach serve on %s:\n%s", addr, tail(s.log.String(), 8000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get(s.base + "/healthz"); err == nil {
			resp.Body.Close()
			return s
		}
		select {
		case <-exited:
			t.Fatalf("reach serve exited:\n%s", s.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("reach serve did not answer on %s within 60s:\n%s", addr, s.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the server as an operator's Ctrl-C does, and waits for it.
func (s *fw33bServer) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("reach serve did not stop within 30s of SIGTERM:\n%s", s.log.String())
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// fw33bClient is the TypeScript SDK client, connected once, driven a
// command at a time.
type fw33bClient struct {
	in    io.WriteCloser
	lines chan string
	errs  *lockedBuffer
}

// fw33bResult is a call's answer as the client saw it: code is reach's
// refusal code (the result's reach/error meta).
type fw33bResult struct {
	IsError bool     `json:"isError"`
	Text    string   `json:"text"`
	Code    string   `json:"code"`
	Thrown  string   `json:"thrown"`
	Tools   []string `json:"tools"`
}

func (k *fw33bKit) connect(t *testing.T, s *fw33bServer) *fw33bClient {
	t.Helper()
	cmd := exec.Command(k.node, filepath.Join(k.dir, "fw33b-driver.mjs"), s.base+"/mcp")
	c := &fw33bClient{lines: make(chan string, 16), errs: &lockedBuffer{}}
	cmd.Stderr = c.errs
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.in = in
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		<-done
		cmd.Wait()
	})
	c.read(t) // {ready: true}
	return c
}

func (c *fw33bClient) read(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			t.Fatalf("the TypeScript client ended:\n%s", c.errs.String())
		}
		return l
	case <-time.After(90 * time.Second):
		t.Fatalf("the TypeScript client did not answer within 90s:\n%s", c.errs.String())
	}
	return ""
}

func (c *fw33bClient) do(t *testing.T, cmd map[string]any) fw33bResult {
	t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	var r fw33bResult
	if l := c.read(t); json.Unmarshal([]byte(l), &r) != nil {
		t.Fatalf("the TypeScript client printed %q", l)
	}
	return r
}

func (c *fw33bClient) call(t *testing.T, tool string, args map[string]any) fw33bResult {
	t.Helper()
	r := c.do(t, map[string]any{"call": tool, "args": args})
	if r.Thrown != "" {
		t.Fatalf("%s threw in the TypeScript client: %s", tool, r.Thrown)
	}
	return r
}

func (c *fw33bClient) tools(t *testing.T) []string {
	t.Helper()
	return c.do(t, map[string]any{"list": true}).Tools
}

// waitFor polls ok, every 20 ms for at most a minute, and fails the test
// saying what did not happen.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after a minute waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scrape reads /metrics with Prometheus's own text parser, which refuses
// what a Prometheus server would.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("Prometheus's parser refuses /metrics: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			key := name
			if len(ls) > 0 {
				slices.Sort(ls)
				key += "{" + strings.Join(ls, ",") + "}"
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
			if h := m.GetHistogram(); h != nil {
				v = float64(h.GetSampleCount())
			}
			out[key] = v
		}
	}
	return out
}

// cli runs the CLI as a process beside the server (no REACH_API_KEY of
// the environment: each test names its key), and returns its standard
// output and error.
func cli(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(exe(t), args...)
	cmd.Env = append(os.Environ(), "REACH_AS_CLI=1", "REACH_API_KEY=")
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// apiJSON gets a JSON answer of the server's API.
func apiJSON(t *testing.T, url string, into any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, into) != nil {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
}

// fw33bVerify is kv__set's declared check: read the key back, and the
// value read must be the value written.
const fw33bVerify = `tools:
  kv__set:
    verify: {tool: kv__get, args: '{"key": "{args.key}"}', condition: 'result.value == args.value'}
`

// TestFW33bVerifyAfterWriteThroughServe (S2, A4, A5): an upstream that
// acknowledges a write it did not apply is caught by the write's declared
// check: the model gets an isError result saying the write did not happen
// and what to do, while a real write passes; the per-tool statistics
// (GET /v1/stats) and the Prometheus metrics (scraped and parsed by
// Prometheus's parser) count the calls, the silent failure and the
// refusal by the guard that refused it.
func TestFW33bVerifyAfterWriteThroughServe(t *testing.T) {
	k := newFW33bKit(t)
	data := t.TempDir()
	cfg := writeConfig(t, k.upstream(false)+fw33bVerify+"  kv__note: {access: forbidden}\n")
	s := k.serve(t, cfg, data)
	c := k.connect(t, s)
	if got := c.tools(t); !slices.Contains(got, "kv__set") || !slices.Contains(got, "kv__get") {
		t.Fatalf("tools/list = %v, want the kv server's set and get", got)
	}

	// A write the upstream applies: the check reads it back, it passes.
	if r := c.call(t, "kv__set", map[string]any{"key": "colour", "value": "blue"}); r.IsError || !strings.Contains(r.Text, `"ok":true`) {
		t.Errorf("a real write = %+v, want the upstream's success", r)
	}
	if r := c.call(t, "kv__get", map[string]any{"key": "colour"}); r.IsError || !strings.Contains(r.Text, `"value":"blue"`) {
		t.Errorf("reading the real write back = %+v", r)
	}
	// A write the upstream acknowledges and drops: the model is told, as
	// an error result, that it did not happen, and what to do.
	r := c.call(t, "kv__set", map[string]any{"key": "lost-colour", "value": "red"})
	if !r.IsError || r.Code != "verify_failed" || !strings.Contains(r.Text, "silent failure") || !strings.Contains(r.Text, "kv__get") {
		t.Errorf("a write the upstream acknowledged and did not apply = %+v, want an isError verify_failed result naming the check and the silent failure", r)
	}
	if !strings.Contains(r.Text, "Treat the write as not done") {
		t.Errorf("the silent failure's text does not say what to do next: %q", r.Text)
	}
	// A refusal, for the statistics' refusals by guard.
	if r := c.call(t, "kv__note", map[string]any{"text": "x"}); !r.IsError || r.Code == "" {
		t.Errorf("a forbidden tool = %+v, want a refusal", r)
	}

	// A4: the statistics of the API, by tool.
	var stats struct {
		Tools []struct {
			Tool      string           `json:"tool"`
			Calls     int64            `json:"calls"`
			Completed int64            `json:"completed"`
			Failed    int64            `json:"failed"`
			Refused   int64            `json:"refused"`
			Failures  map[string]int64 `json:"failures"`
			RefusedBy map[string]int64 `json:"refused_by"`
		} `json:"tools"`
	}
	apiJSON(t, s.base+"/v1/stats", &stats)
	byTool := map[string]int{}
	for i, st := range stats.Tools {
		byTool[st.Tool] = i
	}
	if i, ok := byTool["kv__set"]; !ok {
		t.Errorf("GET /v1/stats has no kv__set: %+v", stats.Tools)
	} else if st := stats.Tools[i]; st.Calls != 2 || st.Completed != 1 || st.Failed != 1 || st.Failures["verify_failed"] != 1 {
		t.Errorf("kv__set's statistics = %+v, want 2 calls, 1 completed, 1 failed by verify_failed", st)
	}
	if i, ok := byTool["kv__note"]; !ok {
		t.Errorf("GET /v1/stats has no kv__note: %+v", stats.Tools)
	} else if st := stats.Tools[i]; st.Refused != 1 || st.Completed != 0 || len(st.RefusedBy) != 1 {
		t.Errorf("kv__note's statistics = %+v, want one refusal, by one guard", st)
	}
	// The verify's own read (and the test's) counts as kv__get's: two
	// checks and one read, each completed.
	if i, ok := byTool["kv__get"]; !ok || stats.Tools[i].Completed != 3 {
		t.Errorf("kv__get's statistics = %+v, want 3 completed (two checks, one read)", stats.Tools)
	}

	// The UI's tools page: kv__set's row, with its calls, its success
	// rate and its failure by code.
	resp, err := http.Get(s.base + "/ui/tools")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	row := string(page)
	if i := strings.Index(row, ">kv__set<"); i < 0 {
		t.Errorf("the UI's tools page has no kv__set:\n%s", page)
	} else if row = row[i:]; strings.Contains(row, "</tr>") {
		row = row[:strings.Index(row, "</tr>")]
	}
	for _, want := range []string{">2<", "50%", "verify_failed"} {
		if !strings.Contains(row, want) {
			t.Errorf("the UI's kv__set row lacks %q: %s", want, row)
		}
	}

	// A5: the same, scraped.
	m := scrape(t, s.base)
	for key, want := range map[string]float64{
		"reach_tool_calls_total{state=completed,tool=kv__set}": 1,
		"reach_tool_calls_total{state=failed,tool=kv__set}":    1,
		"reach_tool_calls_total{state=completed,tool=kv__get}": 3,
		"reach_upstream_up{upstream=kv}":                       1,
	} {
		if m[key] != want {
			t.Errorf("%s = %v, want %v", key, m[key], want)
		}
	}
	refusals := 0.0
	for key, v := range m {
		if strings.HasPrefix(key, "reach_refusals_total{") {
			refusals += v
		}
	}
	if refusals != 1 {
		t.Errorf("reach_refusals_total sums to %v, want the one refusal", refusals)
	}
}

// fw33bAudit is GET /v1/audit?QUERY: events of the log.
func fw33bAudit(t *testing.T, base, query string) []map[string]any {
	t.Helper()
	var out struct {
		Events []map[string]any `json:"events"`
	}
	apiJSON(t, base+"/v1/audit?"+query, &out)
	return out.Events
}

const (
	fw33bPermitAll = "permit (principal, action == Reach::Action::\"call\", resource);\n"
	fw33bNotesOff  = fw33bPermitAll + "@id(\"notes-off\")\n@reason(\"notes are switched off here\")\n" +
		"forbid (principal, action == Reach::Action::\"call\", resource == Reach::Tool::\"kv__note\");\n"
)

// TestFW33bPolicyReloadThroughServe (P5, A3): `reach serve` with a policy
// file and a client connected; the file is edited, and the client's next
// call is decided by the new policies, without a restart (the test waits
// for reach_policy_reloads_total to count the reload, never for a time);
// an edit that does not parse keeps the policies in force and the log
// says why. Then the request's decisions are replayed through the CLI,
// as recorded and under each policy (what-if): each replay names the
// call that policy would decide otherwise.
func TestFW33bPolicyReloadThroughServe(t *testing.T) {
	k := newFW33bKit(t)
	data, dir := t.TempDir(), t.TempDir()
	pol := filepath.Join(dir, "p.cedar")
	write := func(path, text string) {
		t.Helper()
		if err := atomicfile.Write(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(pol, fw33bPermitAll)
	cfg := filepath.Join(dir, "reach.yaml")
	write(cfg, k.upstream(false)+"policy: {path: ./p.cedar}\n")
	s := k.serve(t, cfg, data)
	c := k.connect(t, s)
	reloads := func(outcome string) float64 {
		return scrape(t, s.base)["reach_policy_reloads_total{outcome="+outcome+"}"]
	}
	if r := c.call(t, "kv__note", map[string]any{"text": "before"}); r.IsError {
		t.Fatalf("kv__note under the first policy = %+v", r)
	}
	if n := reloads("loaded"); n != 0 {
		t.Errorf("reach_policy_reloads_total{outcome=loaded} = %v before any edit", n)
	}

	// The edit: the same client's next call is refused by it.
	write(pol, fw33bNotesOff)
	waitFor(t, "the policy edit to be loaded", func() bool { return reloads("loaded") == 1 })
	r := c.call(t, "kv__note", map[string]any{"text": "after"})
	if !r.IsError || r.Code == "" || !strings.Contains(r.Text, "notes are switched off here") {
		t.Errorf("kv__note after the edit = %+v, want a refusal giving the new policy's reason", r)
	}
	if r := c.call(t, "kv__get", map[string]any{"key": "k"}); r.IsError {
		t.Errorf("kv__get after the edit = %+v, want it still allowed", r)
	}

	// A broken edit: counted as failed, the log says where and that the
	// previous policies stay, and they do.
	write(pol, fw33bNotesOff+"permit (principal\n")
	waitFor(t, "the broken edit to be counted", func() bool { return reloads("failed") == 1 })
	if log := s.log.String(); !strings.Contains(log, "p.cedar:") || !strings.Contains(log, "previous ones stay in force") {
		t.Errorf("the log does not say why the broken edit was not loaded, and what stays:\n%s", tail(log, 4000))
	}
	if r := c.call(t, "kv__note", map[string]any{"text": "broken"}); !r.IsError || !strings.Contains(r.Text, "notes are switched off here") {
		t.Errorf("kv__note after the broken edit = %+v, want the policies in force to refuse it still", r)
	}
	if r := c.call(t, "kv__get", map[string]any{"key": "k"}); r.IsError {
		t.Errorf("kv__get after the broken edit = %+v", r)
	}
	if n := reloads("loaded"); n != 1 {
		t.Errorf("reach_policy_reloads_total{outcome=loaded} = %v after the broken edit, want still 1", n)
	}

	// A3: the request's decisions, replayed through the CLI beside the
	// server, once the log has its five calls (the audit is written
	// behind the answers).
	var req string
	waitFor(t, "the audit log to have the request's five calls", func() bool {
		if req == "" {
			if evs := fw33bAudit(t, s.base, "tool=kv__note"); len(evs) > 0 {
				req, _ = evs[0]["request"].(string)
			}
			return false
		}
		ends := 0
		for _, e := range fw33bAudit(t, s.base, "request="+req) {
			ev, _ := e["event"].(map[string]any)
			if d, _ := ev["decision"].(string); ev["kind"] == "tool" && (d == "completed" || d == "refused") {
				ends++
			}
		}
		return ends == 5
	})
	allowAll, notesOff := filepath.Join(dir, "allow.cedar"), filepath.Join(dir, "off.cedar")
	write(allowAll, fw33bPermitAll)
	write(notesOff, fw33bNotesOff)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		// By access level (no policy), as under the first policy: the two
		// refusals of the edited policy would have run.
		{nil, []string{`kv__note {"text":"after"}: recorded refused, now allowed`, `kv__note {"text":"broken"}: recorded refused, now allowed`, "2 of 5 events would be decided differently"}},
		{[]string{"--policy", allowAll}, []string{`kv__note {"text":"after"}: recorded refused, now allowed`, "2 of 5 events would be decided differently"}},
		// What-if under the edit: the call made before it would have been
		// refused, for the edit's reason.
		{[]string{"--policy", notesOff}, []string{`kv__note {"text":"before"}: recorded allowed, now refused (You may not call kv__note: notes are switched off here.)`, "1 of 5 events would be decided differently"}},
	} {
		out, errOut, err := cli(t, append([]string{"audit", "replay", req, "--data", data}, tc.args...)...)
		for _, w := range tc.want {
			if err != nil || !strings.Contains(out, w) {
				t.Errorf("reach audit replay %s %v: %v\n%s%s\nwant %q", req, tc.args, err, out, errOut, w)
			}
		}
	}
}

// TestFW33bPinnedToolThroughServe (P7): the upstream's note tool is pinned
// on a first run; on the next, the same upstream describes it otherwise
// (a rug pull asking for a key file). The tool is held: not listed, and a
// call of it is refused with what changed and the command that lets it
// through; `reach tools diff` shows the change and `reach tools approve`
// (processes beside the server) releases it to the connected client
// without a restart.
func TestFW33bPinnedToolThroughServe(t *testing.T) {
	k := newFW33bKit(t)
	data := t.TempDir()
	first := k.serve(t, writeConfig(t, k.upstream(false)), data)
	if r := k.connect(t, first).call(t, "kv__note", map[string]any{"text": "first run"}); r.IsError || r.Text != "note: first run" {
		t.Fatalf("kv__note on the first run = %+v", r)
	}
	first.stop(t)

	s := k.serve(t, writeConfig(t, k.upstream(true)), data)
	c := k.connect(t, s)
	if got := c.tools(t); slices.Contains(got, "kv__note") || !slices.Contains(got, "kv__get") {
		t.Errorf("tools/list with kv__note's definition changed = %v, want it held and the others listed", got)
	}
	r := c.call(t, "kv__note", map[string]any{"text": "held"})
	if !r.IsError || r.Code != "tool_held" || !strings.Contains(r.Text, "reach tools approve kv__note") {
		t.Errorf("calling the held tool = %+v, want an isError tool_held result naming the command that approves it", r)
	}
	if out, errOut, err := cli(t, "tools", "diff", "kv__note", "--data", data); err != nil || !strings.Contains(out, "id_rsa") {
		t.Errorf("reach tools diff kv__note: %v\n%s%s\nwant the changed description", err, out, errOut)
	}
	if out, errOut, err := cli(t, "tools", "approve", "kv__note", "--data", data); err != nil {
		t.Fatalf("reach tools approve kv__note: %v\n%s%s", err, out, errOut)
	}
	waitFor(t, "the approved kv__note to be listed again", func() bool { return slices.Contains(c.tools(t), "kv__note") })
	if r := c.call(t, "kv__note", map[string]any{"text": "approved"}); r.IsError || r.Text != "note: approved" {
		t.Errorf("kv__note once approved = %+v", r)
	}
}

// fw33bReceiver is an OTLP/HTTP trace receiver: it decodes each export
// with the official protobuf types, or answers status if it is set.
type fw33bReceiver struct {
	mu     sync.Mutex
	spans  []*tracev1.Span
	status int
	bad    []string
	stall  chan struct{} // if not nil, exports get no answer until it is closed
}

func (rc *fw33bReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	if stall := rc.stall; stall != nil {
		rc.mu.Unlock()
		<-stall
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	defer rc.mu.Unlock()
	if rc.status != 0 {
		w.WriteHeader(rc.status)
		return
	}
	var req coltracev1.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
		rc.bad = append(rc.bad, fmt.Sprintf("%s %s %q: %v", r.Method, r.URL.Path, r.Header.Get("Content-Type"), err))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (rc *fw33bReceiver) snapshot() []*tracev1.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.spans)
}

// TestFW33bTracesThroughServe (A5): `reach serve` exporting to an OTLP/HTTP
// receiver: a verified write's spans arrive in one trace, the write's
// call to its upstream under its own span, and the verify's nested read
// under the write's, as the call that made it; once the receiver refuses
// every export, the spans lost are counted on /metrics, not dropped
// silently; and once it takes exports and never answers, the spans a
// shutdown could not export are said lost in the log as it stops.
func TestFW33bTracesThroughServe(t *testing.T) {
	k := newFW33bKit(t)
	rc := &fw33bReceiver{}
	recv := httptest.NewServer(rc)
	t.Cleanup(recv.Close)
	cfg := writeConfig(t, k.upstream(false)+fw33bVerify+"telemetry: {otlp_endpoint: "+recv.URL+"}\n")
	// The SDK's batch delay, from its environment variable: the spans come
	// within 50 ms of their end, not 5 s.
	s := k.serve(t, cfg, t.TempDir(), "OTEL_BSP_SCHEDULE_DELAY=50")
	c := k.connect(t, s)
	if r := c.call(t, "kv__set", map[string]any{"key": "colour", "value": "green"}); r.IsError {
		t.Fatalf("a verified write = %+v", r)
	}
	// The client is done: its session's request ends, and with it the
	// request's root span.
	c.do(t, map[string]any{"end": true})
	type span struct{ id, parent, trace string }
	var spans map[string]span // by name and kind
	waitFor(t, "the request's spans: its root, the write's and its verify's", func() bool {
		spans = map[string]span{}
		for _, s := range rc.snapshot() {
			spans[s.Name+" "+strings.TrimPrefix(s.Kind.String(), "SPAN_KIND_")] = span{hex.EncodeToString(s.SpanId), hex.EncodeToString(s.ParentSpanId), hex.EncodeToString(s.TraceId)}
		}
		return len(spans) == 4
	})
	root, in, up, check := spans["invoke_agent fw33b-driver INTERNAL"], spans["tools/call kv__set SERVER"], spans["tools/call kv__set CLIENT"], spans["tools/call kv__get CLIENT"]
	if root.id == "" || root.parent != "" || in.parent != root.id || up.parent != in.id || check.parent != up.id {
		t.Errorf("spans %v: want the request's root span (invoke_agent), the call that came in under it (SERVER), its call to the upstream under that (CLIENT), and the verify's read under the write", spans)
	}
	for name, s := range spans {
		if s.trace != root.trace {
			t.Errorf("span %s is of trace %s, the request's root of %s", name, s.trace, root.trace)
		}
	}
	rc.mu.Lock()
	if len(rc.bad) > 0 {
		t.Errorf("exports the receiver could not decode: %v", rc.bad)
	}
	// From now on the collector refuses every export: the spans it
	// refuses are lost, and counted.
	rc.status = http.StatusBadRequest
	rc.mu.Unlock()
	c = k.connect(t, s)
	if r := c.call(t, "kv__get", map[string]any{"key": "colour"}); r.IsError || !strings.Contains(r.Text, "green") {
		t.Errorf("a read after the verified write = %+v", r)
	}
	c.do(t, map[string]any{"end": true})
	waitFor(t, "the refused exports to be counted", func() bool {
		return scrape(t, s.base)["reach_spans_dropped_total{reason=export_failed}"] >= 2
	})

	// A collector that takes the spans and never answers: the shutdown
	// waits for it up to its deadline, then says how many spans it lost
	// (the metrics go with the process).
	stall := make(chan struct{})
	t.Cleanup(func() { close(stall) }) // before recv.Close, which waits for the stalled exports
	rc.mu.Lock()
	rc.status, rc.stall = 0, stall
	rc.mu.Unlock()
	c = k.connect(t, s)
	if r := c.call(t, "kv__get", map[string]any{"key": "colour"}); r.IsError {
		t.Errorf("a read with the collector stalled = %+v", r)
	}
	c.do(t, map[string]any{"end": true})
	s.stop(t)
	if log := s.log.String(); !strings.Contains(log, "spans not exported within 5s are lost") && !strings.Contains(log, "spans were lost while serving") {
		t.Errorf("reach stopped with its spans stuck at a stalled collector and did not say they were lost:\n%s", tail(log, 3000))
	}
}

// TestFW33bSpanQueueOverflowThroughServe (A5): the trap of a batching
// exporter, which drops spans silently when its queue overflows. A
// collector that never answers, behind `reach serve` with the
// OpenTelemetry queue size at its smallest (OTEL_BSP_MAX_QUEUE_SIZE=1,
// which reach's own queue in front of the SDK's batcher takes too): the
// spans that do not fit are counted on /metrics as they are dropped, and
// the stop says how many it could not export.
func TestFW33bSpanQueueOverflowThroughServe(t *testing.T) {
	k := newFW33bKit(t)
	stall := make(chan struct{})
	rc := &fw33bReceiver{stall: stall}
	recv := httptest.NewServer(rc)
	t.Cleanup(recv.Close)
	t.Cleanup(func() { close(stall) }) // before recv.Close, which waits for the stalled exports
	cfg := writeConfig(t, k.upstream(false)+"telemetry: {otlp_endpoint: "+recv.URL+"}\n")
	s := k.serve(t, cfg, t.TempDir(), "OTEL_BSP_MAX_QUEUE_SIZE=1")
	c := k.connect(t, s)
	dropped := func() float64 { return scrape(t, s.base)["reach_spans_dropped_total{reason=queue_full}"] }
	// Each call is a few spans; the collector holds the first export, the
	// batcher one span, reach's queue one event: a few calls overflow it.
	for i := 0; dropped() == 0; i++ {
		if i == 50 {
			t.Fatalf("50 calls with the collector stalled and a queue of one: no span counted as dropped")
		}
		if r := c.call(t, "kv__get", map[string]any{"key": fmt.Sprint("k", i)}); r.IsError { // each its own key: no loop
			t.Fatalf("a call with the collector stalled = %+v: tracing must never hold a call", r)
		}
	}
	c.do(t, map[string]any{"end": true})
	s.stop(t)
	if log := s.log.String(); !strings.Contains(log, "spans were lost while serving") || !strings.Contains(log, "queue_full=") {
		t.Errorf("reach stopped after dropping spans and did not say so:\n%s", tail(log, 3000))
	}
}
