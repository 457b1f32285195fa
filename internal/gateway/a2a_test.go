package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolAgent is an A2A agent (the SDK's own server) that calls one of
// reach's tools over MCP for each task, passing on what reach gave it as
// the message says: "baggage" (the header), "traceparent" (the header
// only), "meta" (reach/request in the call's _meta) or "none".
type toolAgent struct {
	reach string // reach's base URL
	mu    sync.Mutex
	got   []string // each tool result's text
	reqs  []string // the request each tool result says it ran in
}

func (a *toolAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		how := ec.Message.Parts[0].Text()
		h := http.Header{}
		var meta mcp.Meta
		switch how {
		case "baggage":
			v, _ := ec.ServiceParams.Get("baggage")
			h.Set("Baggage", v[0])
		case "traceparent":
			v, _ := ec.ServiceParams.Get("traceparent")
			h.Set("Traceparent", v[0])
		case "meta":
			meta = mcp.Meta{"reach/request": ec.Message.Metadata["reach/request"]}
		}
		text := a.call(ctx, h, meta)
		a.mu.Lock()
		a.got = append(a.got, text)
		a.mu.Unlock()
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(text))), nil)
	}
}

func (a *toolAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// call calls get_order through reach's /mcp with headers h.
func (a *toolAgent) call(ctx context.Context, h http.Header, meta mcp.Meta) string {
	c := mcp.NewClient(&mcp.Implementation{Name: "tool-agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a.reach + "/mcp", HTTPClient: &http.Client{Transport: addHeaders(h)}}, nil)
	if err != nil {
		return "connect: " + err.Error()
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_order", Arguments: map[string]any{"order_id": "1001"}, Meta: meta})
	if err != nil {
		return "call: " + err.Error()
	}
	a.mu.Lock()
	a.reqs = append(a.reqs, fmt.Sprint(res.Meta[link.MetaRequest]))
	a.mu.Unlock()
	b, _ := json.Marshal(res.Content)
	return string(b)
}

type addHeaders http.Header

func (h addHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// executorUpstream serves exec as the A2A agent "executor" (described as
// description; JSON-RPC, streaming, one skill), until the test ends.
func executorUpstream(t testing.TB, description string, exec a2asrv.AgentExecutor) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	up := httptest.NewServer(mux)
	t.Cleanup(up.Close)
	card := &a2a.AgentCard{Name: "executor", Description: description, Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(up.URL+"/", a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true}, DefaultInputModes: []string{"text"}, DefaultOutputModes: []string{"text"},
		Skills: []a2a.AgentSkill{{ID: "run", Name: "run", Description: "run", Tags: []string{"run"}}}}
	mux.Handle("GET "+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("POST /", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(exec)))
	return up
}

// a2aGateway serves a gateway with the example tools and one agent,
// executor, run by exec, plus extra YAML.
func a2aGateway(t testing.TB, exec a2asrv.AgentExecutor, extra string) (*Gateway, string) {
	return a2aGatewayStore(t, exec, extra, true)
}

// a2aGatewayStore is a2aGateway with a data folder (store on) or without.
func a2aGatewayStore(t testing.TB, exec a2asrv.AgentExecutor, extra string, stored bool) (*Gateway, string) {
	t.Helper()
	up := executorUpstream(t, "runs tools", exec)
	cfg, err := config.Parse([]byte("examples: true\nbudgets:\n  small: {tool_calls: 5}\nagents:\n  - {name: executor, url: "+up.URL+", budget: small}\n"+extra), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if !stored {
		g, err := New(context.Background(), cfg, &Options{Ephemeral: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		return g, serveTest(t, g).URL
	}
	g := newTestGateway(t, cfg)
	return g, serveTest(t, g).URL
}

func a2aSend(t *testing.T, base, agent, text string) *a2a.Task {
	t.Helper()
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(base+"/a2a/"+agent, a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(http.DefaultClient))
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))})
	if err != nil {
		t.Fatal(err)
	}
	tk, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("got %T", res)
	}
	return tk
}

// An agent's tool call through reach, carrying any one of what reach gave
// it with the message, nests under the delegation and counts against the
// agent's carved budget.
func TestA2AToolCallsNestUnderTheDelegation(t *testing.T) {
	for _, how := range []string{"baggage", "traceparent", "meta"} {
		t.Run(how, func(t *testing.T) {
			ag := &toolAgent{}
			g, base := a2aGateway(t, ag, "")
			ag.reach = base
			tk := a2aSend(t, base, "executor", how)
			if tk.Status.State != a2a.TaskStateCompleted || !strings.Contains(textOf(tk), "1001") {
				t.Fatalf("task %s %q", tk.Status.State, textOf(tk))
			}
			var df *reach.Frame
			for _, r := range g.rt.Requests() {
				for _, f := range r.Frames() {
					if f.Kind == reach.DelegateFrame && f.Name == "executor" {
						df = f
					}
				}
			}
			if df == nil {
				t.Fatal("no delegate frame")
			}
			sub := df.SubRequest()
			fs := sub.Frames()
			if len(fs) != 1 || fs[0].Name != "get_order" || fs[0].Parent != df || fs[0].Request != sub {
				t.Fatalf("the sub-request's frames: %v", fs)
			}
			if u := sub.Usage(); u.ToolCalls != 1 || sub.Budget().ToolCalls != 5 {
				t.Errorf("sub-request usage %+v budget %+v", u, sub.Budget())
			}
			if ag.reqs[0] != sub.ID() {
				t.Errorf("the call says it ran in %s, want the sub-request %s", ag.reqs[0], sub.ID())
			}
		})
	}
}

// GET /v1/agents lists the agents with what their cards say.
func TestA2AListAgents(t *testing.T) {
	_, base := a2aGateway(t, &toolAgent{}, "")
	code, out := do(t, "GET", base+"/v1/agents", "", nil)
	if code != 200 || path(out, "agents", 0, "name") != "executor" || path(out, "agents", 0, "card") != true ||
		path(out, "agents", 0, "path") != "/a2a/executor" || path(out, "agents", 0, "budget", "tool_calls") != float64(5) {
		t.Fatalf("%d %v", code, out)
	}
	code, out = do(t, "GET", base+"/a2a/executor/.well-known/agent-card.json", "", nil)
	if code != 200 || out["url"] != base+"/a2a/executor" {
		t.Errorf("card %d %v", code, out)
	}
}

// The agents: and a2a: keys are checked with the line of each mistake.
func TestA2AConfigErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"agents:\n  - {name: a, url: http://h:1}\n  - {name: a, url: http://h:2}\n", `line 3: agent name "a" is used twice`},
		{"agents:\n  - {name: a, url: ftp://h}\n", "line 2: agent a: url"},
		{"agents:\n  - {name: 'a b', url: http://h}\n", "use letters, digits"},
		{"agents:\n  - {name: a, url: http://h, budget: tiny}\n", `line 2: agent a: there is no budget named "tiny"`},
		{"agents:\n  - {name: a, url: http://h, reentrancy: keyed}\n", "keyed needs key"},
		{"agents:\n  - {name: a, url: http://u:p@h}\n", "carries credentials"},
		{"agents:\n  - {name: a, url: http://h, colour: red}\n", "unknown field"},
		{"a2a:\n  max_task_bytes: -1\n", "line 2: a2a max_task_bytes -1: use a number of bytes from 1024 (1 KiB) to 67108864 (64 MiB"},
		{"a2a:\n  max_task_bytes: 100\n", "line 2: a2a max_task_bytes 100: use a number of bytes from 1024"},
		{"a2a:\n  max_task_bytes: 1073741824\n", "a2a max_task_bytes 1073741824: use"},
		{"a2a:\n  max_total_bytes: 1048576\n", "line 2: a2a max_total_bytes 1048576: use a number of bytes at least max_task_bytes (8388608)"},
		{"a2a:\n  max_task_bytes: 4096\n  max_total_bytes: -5\n", "line 3: a2a max_total_bytes -5"},
		{"a2a:\n  max_read_bytes: -1\n", "line 2: a2a max_read_bytes -1: use a number of bytes, or leave it out for 64 MiB"},
		{"a2a:\n  max_task_byte: 4096\n", "unknown field"},
	} {
		_, err := config.Parse([]byte(tc.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// With auth, the A2A endpoints need a key like every other path, and a
// caller's tasks are its own.
func TestA2AAuth(t *testing.T) {
	_, url, _, keys := authGateway(t, "agents:\n  - {name: executor, url: http://127.0.0.1:1}\n")
	code, _ := do(t, "GET", url+"/a2a/executor/.well-known/agent-card.json", "", nil)
	if code != http.StatusUnauthorized {
		t.Errorf("card without a key: %d", code)
	}
	send := func(who string) map[string]any {
		_, out := do(t, "POST", url+"/a2a/executor", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}}`,
			map[string]string{"Authorization": "Bearer " + keys[who], "A2A-Version": "1.0", "Content-Type": "application/json"})
		return out
	}
	out := send("alice")
	id, _ := path(out, "result", "task", "id").(string)
	if path(out, "result", "task", "status", "state") != "TASK_STATE_FAILED" || id == "" {
		t.Fatalf("alice's send: %v", out)
	}
	get := func(who string) map[string]any {
		_, out := do(t, "POST", url+"/a2a/executor", fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":%q}}`, id),
			map[string]string{"Authorization": "Bearer " + keys[who], "A2A-Version": "1.0", "Content-Type": "application/json"})
		return out
	}
	if out := get("alice"); path(out, "result", "id") != id {
		t.Errorf("alice's GetTask: %v", out)
	}
	if out := get("bob"); path(out, "error", "code") != float64(-32001) {
		t.Errorf("bob's GetTask of alice's task: %v", out)
	}
}

func textOf(tk *a2a.Task) string {
	if tk.Status.Message == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range tk.Status.Message.Parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

// TestA2ATaskEventMasked: an agent's status message that carries a
// configured secret is recorded in the audit log masked, as every other
// text the log keeps.
func TestA2ATaskEventMasked(t *testing.T) {
	const key = "sk-model-KEY-0123456789"
	g, base := a2aGateway(t, echoAgent{}, "model: {base_url: 'http://127.0.0.1:9/v1', api_key: '"+key+"'}\n")
	tk := a2aSend(t, base, "executor", "the key is "+key+", keep it")
	if tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("the task is %s", tk.Status.State)
	}
	// Task events reach the log from a queue of their own: wait for the
	// completed one.
	var rows strings.Builder
	awaitAgents(t, "the completed task event in the audit log", func() bool {
		rows.Reset()
		for _, r := range g.rt.Requests() {
			rows.WriteString(auditOf(t, g, r.ID()))
		}
		return strings.Contains(rows.String(), `"kind":"task"`) && strings.Contains(rows.String(), `"decision":"completed","reason":"state"`)
	})
	if strings.Contains(rows.String(), "0123456789") {
		t.Errorf("the audit log holds the secret: %s", rows.String())
	}
}

// TestA2AAnswerMasked: what an agent answers that carries a configured
// secret (a text part, a data part) reaches its caller masked, as a tool's
// result does: in the task a send returns and in GetTask.
func TestA2AAnswerMasked(t *testing.T) {
	const key = "sk-model-KEY-0123456789"
	_, base := a2aGateway(t, echoAgent{}, "model: {base_url: 'http://127.0.0.1:9/v1', api_key: '"+key+"'}\n")
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(base+"/a2a/executor", a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(http.DefaultClient))
	if err != nil {
		t.Fatal(err)
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("the key is "+key), a2a.NewDataPart(map[string]any{"api": key, "password": "hunter22", "n": 1}))
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	tk, ok := res.(*a2a.Task)
	if !ok || tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("got %#v", res)
	}
	got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: tk.ID})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]*a2a.Task{"the send's task": tk, "GetTask": got} {
		b, _ := json.Marshal(v.Status.Message)
		if strings.Contains(string(b), "0123456789") || strings.Contains(string(b), "hunter22") || !strings.Contains(string(b), "the key is [REDACTED]") {
			t.Errorf("%s: the agent's answer reached its caller as %s", name, b)
		}
	}
}

// TestA2APartsMaskedAsOne: a configured secret an agent spells across two
// text parts of one message reaches its caller masked, as a tool result's
// blocks are: the caller reads the parts' texts joined.
func TestA2APartsMaskedAsOne(t *testing.T) {
	const key = "sk-model-KEY-0123456789"
	_, base := a2aGateway(t, echoAgent{}, "model: {base_url: 'http://127.0.0.1:9/v1', api_key: '"+key+"'}\n")
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(base+"/a2a/executor", a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(http.DefaultClient))
	if err != nil {
		t.Fatal(err)
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("the key is sk-"), a2a.NewTextPart("model-KEY-01"), a2a.NewTextPart("23456789, keep it"))
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	tk, ok := res.(*a2a.Task)
	if !ok || tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("got %#v", res)
	}
	got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: tk.ID})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]*a2a.Task{"the send's task": tk, "GetTask": got} {
		if s := textOf(v); s != "the key is [REDACTED], keep it" {
			t.Errorf("%s: the agent's answer reached its caller as %q", name, s)
		}
	}
}

// chunkAgent streams its answer as an artifact in the chunks its message
// names, separated by "|": the first begins the artifact, each other is
// appended to it, the last marked so unless the message begins with
// "open ". A chunk "#" is a data part.
type chunkAgent struct{}

func (chunkAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		text, open := strings.CutPrefix(ec.Message.Parts[0].Text(), "open ")
		chunks := strings.Split(text, "|")
		part := func(c string) *a2a.Part {
			if c == "#" {
				return a2a.NewDataPart(map[string]any{"n": 1})
			}
			return a2a.NewTextPart(c)
		}
		first := a2a.NewArtifactEvent(ec, part(chunks[0]))
		if !yield(first, nil) {
			return
		}
		for i, c := range chunks[1:] {
			ev := a2a.NewArtifactUpdateEvent(ec, first.Artifact.ID, part(c))
			ev.LastChunk = i == len(chunks)-2 && !open
			if !yield(ev, nil) {
				return
			}
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (chunkAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// TestA2AArtifactChunksMasked: a configured secret an agent spells across
// the chunks of a streamed artifact reaches its caller masked, as one the
// agent sends whole: in the chunks the caller joins as they come, in the
// task a send returns and in GetTask; and nothing else of the answer is
// lost or moved.
func TestA2AArtifactChunksMasked(t *testing.T) {
	const key = "sk-model-KEY-0123456789"
	_, base := a2aGateway(t, chunkAgent{}, "model: {base_url: 'http://127.0.0.1:9/v1', api_key: '"+key+"'}\n")
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(base+"/a2a/executor", a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(http.DefaultClient))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ chunks, want string }{
		{"the key is sk-model-|KEY-0123456789, keep it", "the key is [REDACTED], keep it"},
		{"the key is sk-|model-KEY-01|23456789|, keep it", "the key is [REDACTED], keep it"},
		{"the key is sk-model-KEY-0123456789|, keep it", "the key is [REDACTED], keep it"}, // whole in one chunk
		{"the key is sk-model-KEY-0|123456789", "the key is [REDACTED]"},                   // split in the last chunk
		{"open the key is sk-model-|KEY-0123456789", "the key is [REDACTED]"},              // no last chunk: the task's end lets it go
		{"the key is sk-model-KEY-012345|", "the key is [REDACTED]"},                       // a start that gives enough of it away
		{"the key is sk-model-|#|KEY-0123456789", "the key is [REDACTED]KEY-0123456789"},   // not one text
		{"nothing to hide|, at all", "nothing to hide, at all"},
	} {
		chunks, want := tc.chunks, tc.want
		var streamed strings.Builder
		var id a2a.TaskID
		for ev, err := range c.SendStreamingMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(chunks))}) {
			if err != nil {
				t.Fatal(err)
			}
			switch e := ev.(type) {
			case *a2a.Task:
				id = e.ID
			case *a2a.TaskArtifactUpdateEvent:
				for _, p := range e.Artifact.Parts {
					streamed.WriteString(p.Text())
				}
			}
		}
		if streamed.String() != want {
			t.Errorf("%q: the caller joined the streamed chunks into %q, want %q", chunks, streamed.String(), want)
		}
		got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		var kept strings.Builder
		for _, a := range got.Artifacts {
			for _, p := range a.Parts {
				kept.WriteString(p.Text())
			}
		}
		if kept.String() != want {
			t.Errorf("%q: GetTask's artifact is %q, want %q", chunks, kept.String(), want)
		}
	}
}

// bigAgent answers every message with an artifact of n bytes.
type bigAgent struct{ n int }

func (a bigAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart(strings.Repeat("b", a.n))), nil) {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		}
	}
}

func (bigAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// TestA2AMaxTaskBytesConfigured: a2a.max_task_bytes in the configuration
// bounds a task as the option does: an agent's answer of 8 KiB fails the
// task at reach with a 4 KiB bound, its message saying the bound; without
// the key (8 MiB) it completes.
func TestA2AMaxTaskBytesConfigured(t *testing.T) {
	for _, tc := range []struct {
		extra string
		want  a2a.TaskState
	}{{"a2a:\n  max_task_bytes: 4096\n", a2a.TaskStateFailed}, {"", a2a.TaskStateCompleted}} {
		_, base := a2aGateway(t, bigAgent{8 << 10}, tc.extra)
		tk := a2aSend(t, base, "executor", "go")
		if tk.Status.State != tc.want || tc.want == a2a.TaskStateFailed && !strings.Contains(textOf(tk), "over 4096 bytes") {
			t.Errorf("%q: the task is %s %.80q, want %s", tc.extra, tk.Status.State, textOf(tk), tc.want)
		}
	}
}
