package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/loopbench"
	"github.com/agentreach/reach/internal/store"
)

type reachRequest = reach.Request

// The real-agent tests: a planner, an executor and a verifier written with
// the A2A JS SDK (testdata/a2a/agent.cjs), each a node process, reaching
// their tools through reach's /mcp and their model through reach's model
// proxy, backed by a scripted model.

// a2aCache finds the folder scripts/a2a-deps.sh installs into, or skips,
// saying why; under REACH_CI (make test) it fails instead, as
// frameworksCache does, so that CI never passes by skipping.
func a2aCache(t *testing.T) string {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("REACH_CI") != "" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	if testing.Short() {
		t.Skip("starts node processes")
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not installed: skipping the A2A agent tests (install node and npm, then run scripts/a2a-deps.sh)")
	}
	dir := os.Getenv("REACH_A2A_CACHE")
	if dir == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".cache", "a2a")
	}
	for _, pkg := range []string{"@a2a-js/sdk", "express", "@modelcontextprotocol/sdk"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			missing("%s is not installed in %s: run scripts/a2a-deps.sh (make test does)", pkg, dir)
		}
	}
	return dir
}

// scriptedModel is an OpenAI-compatible model that answers by the role in
// the system prompt, 40 tokens in and 10 out each time; a turn asked to
// spend ("spend N", "stream N") writes 100 tokens, past any cap it was
// sent.
type scriptedModel struct {
	calls, tokens atomic.Int64
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	json.NewDecoder(r.Body).Decode(&body)
	say := "ok"
	if len(body.Messages) > 0 {
		switch {
		case strings.Contains(body.Messages[0].Content, "verifier"):
			say = "REJECTED: no tracking number"
		case strings.Contains(body.Messages[0].Content, "executor"):
			say = "call get_order for order 1001"
		case strings.Contains(body.Messages[0].Content, "planner"):
			say = "hand the order to the executor, then to the verifier"
		}
	}
	out := 10
	if len(body.Messages) > 1 {
		if verb, n, ok := strings.Cut(body.Messages[1].Content, " "); ok && (verb == "spend" || verb == "stream") && strings.Trim(n, "0123456789") == "" {
			out = 100
		}
	}
	m.calls.Add(1)
	m.tokens.Add(int64(40 + out))
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "model": "scripted",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": say}}},
		"usage":   map[string]any{"prompt_tokens": 40, "completion_tokens": out, "total_tokens": 40 + out}})
}

// jsAgent is one agent process and what it wrote.
type jsAgent struct {
	role string
	url  string
	cmd  *exec.Cmd

	mu     sync.Mutex
	events []map[string]any
	logs   strings.Builder
}

// startAgent runs testdata/a2a/agent.cjs as role with env, and waits until
// it listens.
func startAgent(t *testing.T, cache, role string, env map[string]string) *jsAgent {
	t.Helper()
	script, err := filepath.Abs("testdata/a2a/agent.cjs")
	if err != nil {
		t.Fatal(err)
	}
	a := &jsAgent{role: role}
	a.cmd = exec.Command("node", script)
	a.cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(cache, "node_modules"), "ROLE="+role)
	for k, v := range env {
		a.cmd.Env = append(a.cmd.Env, k+"="+v)
	}
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := a.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a.cmd.Stderr = &lockedWriter{mu: &a.mu, b: &a.logs}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				a.mu.Lock()
				a.logs.WriteString(sc.Text() + "\n")
				a.mu.Unlock()
				continue
			}
			a.mu.Lock()
			a.events = append(a.events, ev)
			a.mu.Unlock()
			if ev["event"] == "listening" {
				listening <- int(ev["port"].(float64))
			}
		}
	}()
	t.Cleanup(func() {
		syscall.Kill(-a.cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { a.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			a.mu.Lock()
			t.Logf("%s's stderr:\n%s", role, a.logs.String())
			a.mu.Unlock()
		}
	})
	select {
	case p := <-listening:
		a.url = fmt.Sprintf("http://127.0.0.1:%d/", p)
	case <-time.After(30 * time.Second):
		a.mu.Lock()
		defer a.mu.Unlock()
		t.Fatalf("%s did not listen within 30s:\n%s", role, a.logs.String())
	}
	return a
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// all returns the agent's events of a kind.
func (a *jsAgent) all(kind string) []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []map[string]any
	for _, e := range a.events {
		if e["event"] == kind {
			out = append(out, e)
		}
	}
	return out
}

// cast is reach (on a listener opened first) with the three agents.
type cast struct {
	g      *Gateway
	reach  string
	g2     *Gateway // with castOptions.fleet: the second instance
	reach2 string
	model  *scriptedModel
	agents map[string]*jsAgent
}

// castOptions say how to start a cast.
type castOptions struct {
	direct  bool                         // the agents talk to each other, not through reach
	env     map[string]string            // every agent's environment
	roleEnv map[string]map[string]string // one agent's
	agent   map[string]string            // YAML fields of an agent's entry: "reentrancy: reentrant"
	extra   string                       // more YAML
	// fleet, a PostgreSQL URL, runs two instances of reach on that store
	// ("one" at reach, "two" at reach2); second names, for a role, the
	// variables of its environment that point at "two" (REACH, or a
	// peer's: VERIFIER).
	fleet  string
	second map[string][]string
}

// startCast opens reach's listener, starts the agents (each pointed at its
// peers through reach, or directly), then builds and serves reach with
// them.
func startCast(t *testing.T, o castOptions) *cast {
	t.Helper()
	cache := a2aCache(t)
	c := &cast{model: &scriptedModel{}, agents: map[string]*jsAgent{}}
	ms := httptest.NewServer(c.model)
	t.Cleanup(ms.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.reach = "http://" + ln.Addr().String()
	var ln2 net.Listener
	if o.fleet != "" {
		if ln2, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		c.reach2 = "http://" + ln2.Addr().String()
	}
	for _, role := range []string{"verifier", "executor", "planner"} {
		e := map[string]string{"REACH": c.reach}
		for k, v := range o.env {
			e[k] = v
		}
		for k, v := range o.roleEnv[role] {
			e[k] = v
		}
		for _, p := range []string{"planner", "executor", "verifier"} {
			k := strings.ToUpper(p)
			switch {
			case !o.direct:
				e[k] = c.reach + "/a2a/" + p + "/"
			case c.agents[p] != nil:
				e[k] = c.agents[p].url
			}
		}
		for _, k := range o.second[role] {
			if k == "REACH" {
				e[k] = c.reach2
			} else {
				e[k] = c.reach2 + "/a2a/" + strings.ToLower(k) + "/"
			}
		}
		c.agents[role] = startAgent(t, cache, role, e)
	}
	yaml := fmt.Sprintf("examples: true\nmodel: {base_url: %s/v1, name: scripted}\nagents:\n", ms.URL)
	for _, role := range []string{"planner", "executor", "verifier"} {
		more := ""
		if f := o.agent[role]; f != "" {
			more = ", " + f
		}
		yaml += fmt.Sprintf("  - {name: %s, url: %q%s}\n", role, strings.TrimSuffix(c.agents[role].url, "/"), more)
	}
	serve := func(ln net.Listener, head string) *Gateway {
		cfg, err := config.Parse([]byte(head+yaml+o.extra), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		g := newTestGateway(t, cfg)
		srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: g.Handler()}}
		srv.Start()
		t.Cleanup(srv.Close)
		return g
	}
	if o.fleet == "" {
		c.g = serve(ln, "")
		return c
	}
	c.g = serve(ln, fmt.Sprintf("store: %s\ninstance: one\n", o.fleet))
	c.g2 = serve(ln2, fmt.Sprintf("store: %s\ninstance: two\n", o.fleet))
	return c
}

// send sends text to role (through reach, or directly with direct), in the
// request named req when not empty, and waits for the task's end.
func (c *cast) send(t *testing.T, direct bool, role, text, req string) *a2a.Task {
	t.Helper()
	url := c.reach + "/a2a/" + role
	if direct {
		url = c.agents[role].url
	}
	cl, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(&http.Client{}))
	if err != nil {
		t.Fatal(err)
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	if req != "" {
		m.Metadata = map[string]any{"reach/request": req}
	}
	res, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatalf("send %q to %s: %v", text, role, err)
	}
	tk, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("send %q to %s: got %T", text, role, res)
	}
	return tk
}

// The background incident: the planner re-delegates the same sub-task,
// the executor re-runs the same tool and the verifier returns the same
// rejection. Without reach it loops to the test's cap; with reach the
// third round's hand-off is refused, the planner reads why, and the run
// ends.
func TestA2AAgentsIncident(t *testing.T) {
	const capRounds = 30
	type figures struct{ rounds, tools, tokens int }
	run := func(t *testing.T, direct bool) (figures, *a2a.Task, *cast) {
		c := startCast(t, castOptions{direct: direct, env: map[string]string{"CAP": fmt.Sprint(capRounds)}})
		tk := c.send(t, direct, "planner", "incident: ship order 1001", "")
		if tk.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("the planner's task ended %s: %q", tk.Status.State, textOf(tk))
		}
		// What the agents wrote before the planner finished has been read.
		awaitAgents(t, "the planner's last line", func() bool { return len(c.agents["planner"].all("done")) == 1 })
		return figures{len(c.agents["planner"].all("round")), len(c.agents["executor"].all("tool")), int(c.model.tokens.Load())}, tk, c
	}
	without, tk, _ := run(t, true)
	if without.rounds != capRounds || without.tools != capRounds || textOf(tk) != fmt.Sprintf("gave up after %d rounds", capRounds) {
		t.Fatalf("without reach: %+v, %q; want the cap of %d rounds", without, textOf(tk), capRounds)
	}
	with, tk, c := run(t, false)
	text := textOf(tk)
	if with.rounds != 3 || with.tools != 2 || !strings.HasPrefix(text, "stopped in round 3: the executor's hand-off ended TASK_STATE_REJECTED") {
		t.Fatalf("with reach: %+v, %q; want the third round refused", with, text)
	}
	// The refusal says what repeated (the task, and the executor's own
	// account, the same each round: the planner hands the executor and the
	// verifier their tasks in one turn, a fan-out, so the executor's round
	// ends with its own verdict, not its sibling's) and what to do instead.
	for _, want := range []string{`"ship order 1001"`, `"shipped order 1001; tracking number: none"`, "give the task what the last account lacked", "accept the last result"} {
		if !strings.Contains(text, want) {
			t.Errorf("the planner's answer %q lacks %q", text, want)
		}
	}
	// Everything the agents did is one tree in reach: the tool calls and
	// model turns nest under the hand-offs.
	var root string
	for _, r := range c.g.rt.Requests() {
		if r.Root() == r && len(r.Children()) > 0 {
			root = r.ID()
		}
	}
	u, _ := c.g.rt.Lookup(root)
	if got := u.Usage(); got.ToolCalls != 2 || got.Turns != 3+2+2 || got.Tokens != int64(with.tokens) {
		t.Errorf("the tree's usage %+v, want 2 tool calls, 7 turns, %d tokens", got, with.tokens)
	}
	// The audit replays the run, the agents' work under the hand-offs, and
	// decides the third hand-off as it was decided.
	c.g.audit.Flush(t.Context())
	evs, err := c.g.audit.Show(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	for queue := []string{root}; len(queue) > 0; queue = queue[1:] {
		subs, err := c.g.store.ListRequests(t.Context(), store.RequestFilter{Parent: queue[0]})
		if err != nil {
			t.Fatal(err)
		}
		for _, sub := range subs {
			more, _ := c.g.audit.Show(t.Context(), sub.ID)
			evs = append(evs, more...)
			queue = append(queue, sub.ID)
		}
	}
	tr, recorded := loopbench.FromAudit(root, evs, nil)
	var delegates, refused int
	for _, d := range loopbench.Decisions(tr, nil) {
		e := tr.Events[tr.Index(d.ID)]
		if e.Type == "delegate" {
			delegates++
		}
		if d.Refused {
			refused++
			if e.Type != "delegate" || e.To != "executor" || d.Code != "loop_delegation" || recorded[d.ID] != loopbench.Refused {
				t.Errorf("replay refused %s %s %s (%s), recorded %s", e.Type, e.To, e.Tool, d.Code, recorded[d.ID])
			}
		}
	}
	if delegates != 6 || refused != 1 {
		t.Errorf("replay: %d hand-offs (want 6: the planner's, 2 rounds of 2, the refused one), %d refused (want 1)", delegates, refused)
	}
	t.Logf("incident, without reach: %d rounds, %d tool calls, %d tokens; with reach: %d rounds, %d tool calls, %d tokens",
		without.rounds, without.tools, without.tokens, with.rounds, with.tools, with.tokens)
}

// A cycle of agents, planner -> executor -> planner with the same task, is
// refused whether the agents pass reach's context on or only name their
// task (referenceTaskIds).
func TestA2AAgentsCycle(t *testing.T) {
	for _, link := range []string{"forward", "protocol"} {
		t.Run(link, func(t *testing.T) {
			// The planner is reentrant: the cycle, not its contract, refuses it.
			c := startCast(t, castOptions{env: map[string]string{"LINK": link}, agent: map[string]string{"planner": "reentrancy: reentrant"}})
			tk := c.send(t, false, "planner", "cycle: plan the trip", "")
			text := textOf(tk)
			if tk.Status.State != a2a.TaskStateCompleted || !strings.Contains(text, "TASK_STATE_REJECTED") {
				t.Fatalf("planner: %s %q", tk.Status.State, text)
			}
			d := c.agents["executor"].all("delegate")
			if len(d) != 1 || d[0]["state"] != "TASK_STATE_REJECTED" || !strings.Contains(d[0]["text"].(string), "This would create a cycle: agent planner") {
				t.Fatalf("the executor's hand-off back: %v", d)
			}
			if n := len(c.agents["planner"].all("task")); n != 1 {
				t.Errorf("the planner got %d tasks, want 1", n)
			}
		})
	}
}

// A sub-agent whose budget, carved from its parent's, runs out is
// stopped (its task canceled at reach and at the agent), while its parent
// goes on.
func TestA2AAgentsBudget(t *testing.T) {
	// 140 tokens a turn, its answer past its cap: the third turn (about 60
	// tokens of prompt as the budget counts it, 120 left) is admitted and
	// spends the budget. (A model that keeps to its cap never spends a
	// budget past its end: its turn is refused before it is sent, 402.)
	c := startCast(t, castOptions{agent: map[string]string{"executor": "budget: small"}, extra: "budgets:\n  small: {tokens: 400}\n"})
	tk := c.send(t, false, "planner", "budget", "")
	text := textOf(tk)
	if tk.Status.State != a2a.TaskStateCompleted || !strings.Contains(text, "executor TASK_STATE_CANCELED") ||
		!strings.Contains(text, "tokens budget") || !strings.HasSuffix(text, "finished myself: true") {
		t.Fatalf("planner: %s %q", tk.Status.State, text)
	}
	// The executor's third model turn spent its budget: reach stopped its
	// hand-off and sent it CancelTask; a further turn is refused.
	ex := c.agents["executor"]
	awaitAgents(t, "the executor's CancelTask", func() bool { return len(ex.all("cancel")) == 1 })
	awaitAgents(t, "the executor's third model turn", func() bool { return len(ex.all("model")) >= 3 })
	ms := ex.all("model")
	if ms[0]["ok"] != true || ms[1]["ok"] != true || ms[2]["ok"] != true {
		t.Fatalf("the executor's model calls: %v", ms)
	}
	if len(ms) > 3 && (ms[3]["ok"] != false || ms[3]["status"] != float64(http.StatusPaymentRequired)) {
		t.Errorf("the executor's fourth model call: %v", ms[3])
	}
}

// percentile of sorted durations.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

// startWork sends "work" to the planner through reach, in request req,
// without waiting for its end, and waits until each agent works (calls
// its tools) on its part of it: the n-th task of each.
func (c *cast) startWork(t *testing.T, req string, n int) {
	t.Helper()
	cl, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(c.reach+"/a2a/planner", a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(&http.Client{}))
	if err != nil {
		t.Fatal(err)
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("work"))
	m.Metadata = map[string]any{"reach/request": req}
	if _, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}}); err != nil {
		t.Fatal(err)
	}
	for _, a := range c.agents {
		awaitAgents(t, a.role+" to work", func() bool { return len(a.all("working")) >= n })
	}
}

func awaitAgents(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// stopRequest cancels a request through the API.
func (c *cast) stopRequest(t *testing.T, req, mode string) {
	t.Helper()
	code, out := do(t, "POST", c.reach+"/v1/requests/"+req+"/cancel", `{"mode":"`+mode+`","reason":"the user changed their mind"}`, nil)
	if code != 200 {
		t.Fatalf("cancel %s: %d %v", req, code, out)
	}
}

// A cancel of the root request while all three agents work stops every
// agent's task: each agent gets CancelTask, each task is canceled at
// reach. The time from the cancel to the last agent's CancelTask is
// measured (REACH_A2A_CANCEL_TRIES tries; 5 by default).
func TestA2AAgentsCancel(t *testing.T) {
	tries := 5
	if n, err := strconv.Atoi(os.Getenv("REACH_A2A_CANCEL_TRIES")); err == nil && n > 0 {
		tries = n
	}
	c := startCast(t, castOptions{})
	var lat []time.Duration
	for i := range tries {
		req := fmt.Sprintf("cancel-try-%d", i)
		c.startWork(t, req, i+1)
		t0 := time.Now()
		c.stopRequest(t, req, "cancel")
		var last float64
		for _, a := range c.agents {
			awaitAgents(t, a.role+" to see CancelTask", func() bool { return len(a.all("cancel")) >= i+1 })
			last = max(last, a.all("cancel")[i]["t"].(float64))
		}
		lat = append(lat, time.Duration((last-float64(t0.UnixNano())/1e6)*float64(time.Millisecond)))
		root, _ := c.g.rt.Lookup(req)
		sub := root.Children()[0]
		for _, r := range []*reachRequest{sub, sub.Children()[0], sub.Children()[0].Children()[0]} {
			if r.State() != "stopped_cancel" {
				t.Errorf("try %d: %s's hand-off is %s", i, r.Agent(), r.State())
			}
		}
		// Reach settles each task canceled once the agent answered the
		// cancel on the task's stream (what it sent before is kept), so
		// after the agent saw CancelTask: wait for it.
		for _, name := range []string{"planner", "executor", "verifier"} {
			var st any
			awaitAgents(t, name+"'s task to be canceled at reach", func() bool {
				_, out := do(t, "POST", c.reach+"/a2a/"+name, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":1}}`,
					map[string]string{"A2A-Version": "1.0", "Content-Type": "application/json"})
				st = path(out, "result", "tasks", 0, "status", "state")
				return st == "TASK_STATE_CANCELED"
			})
		}
	}
	// What each agent's A2A client (the JS SDK's) read of the hand-off it
	// made: canceled, saying who stopped it, why and what to do.
	for _, name := range []string{"planner", "executor"} {
		a := c.agents[name]
		awaitAgents(t, name+"'s client to read its hand-offs' ends", func() bool { return len(a.all("delegate")) >= tries })
		for _, e := range a.all("delegate") {
			txt, _ := e["text"].(string)
			if e["state"] != "TASK_STATE_CANCELED" || !strings.Contains(txt, "by api: the user changed their mind") || !strings.Contains(txt, "report what was done so far") {
				t.Errorf("%s's client read its hand-off to %v as %v %q", name, e["to"], e["state"], txt)
			}
		}
	}
	t.Logf("cancel cascade over %d tries: p50 %v, p99 %v (from the API's cancel to the last of three agents getting CancelTask)",
		tries, percentile(lat, 0.5).Round(10*time.Microsecond), percentile(lat, 0.99).Round(10*time.Microsecond))
}

// Agents that ignore CancelTask and go on calling tools: every call after
// the cancel is refused, and reach isolates their hand-offs, saying so in
// the audit.
func TestA2AAgentsIgnoreCancel(t *testing.T) {
	c := startCast(t, castOptions{env: map[string]string{"IGNORE_CANCEL": "1"}})
	c.startWork(t, "ignored", 1)
	c.stopRequest(t, "ignored", "cancel")
	for _, a := range c.agents {
		awaitAgents(t, a.role+" to be refused a tool call", func() bool {
			ts := a.all("tool")
			return len(ts) > 0 && ts[len(ts)-1]["ok"] == false
		})
		ts := a.all("tool")
		if code := ts[len(ts)-1]["code"]; code != "stopped_cancel" && code != "stopped_isolate" {
			t.Errorf("%s's last tool call was refused with %v", a.role, code)
		}
	}
	root, _ := c.g.rt.Lookup("ignored")
	awaitAgents(t, "the hand-offs to be isolated", func() bool {
		for _, r := range []*reachRequest{root.Children()[0], root.Children()[0].Children()[0], root.Children()[0].Children()[0].Children()[0]} {
			if r.State() != "stopped_isolate" {
				return false
			}
		}
		return true
	})
	// The audit says which agent did not confirm, for each hand-off.
	for _, r := range []*reachRequest{root.Children()[0], root.Children()[0].Children()[0], root.Children()[0].Children()[0].Children()[0]} {
		awaitAgents(t, r.Agent()+"'s isolation in the audit", func() bool {
			evs, err := c.g.audit.Show(t.Context(), r.ID())
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				if e.Kind == "task" && e.Reason == "isolate" && e.Name == r.Agent() && strings.Contains(e.Message, "did not confirm the cancel") {
					return true
				}
			}
			return false
		})
	}
}
