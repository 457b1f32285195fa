package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/agentreach/reach"
)

// A message through the gateway is a delegation frame: the agent gets
// reach's context in the metadata and headers (and never the caller's
// credentials), and the task comes back as the agent left it.
func TestSendIsADelegation(t *testing.T) {
	h := newHarness(t, nil, "executor")
	tk := h.send("executor", "alice", "echo ship order 1001", nil)
	if tk.Status.State != a2a.TaskStateCompleted || statusText(tk) != "done: ship order 1001" {
		t.Fatalf("task = %s %q", tk.Status.State, statusText(tk))
	}
	if len(tk.Artifacts) != 1 || textOf(tk.Artifacts[0].Parts) != "echo: ship order 1001" {
		t.Errorf("artifacts = %v", tk.Artifacts)
	}
	s := h.agents["executor"].seen()[0]
	fr := h.g.tasks.get("executor", tk.ID, Owner{Principal: "alice"}).frame
	sub := fr.SubRequest()
	if s.meta[MetaRequest] != sub.ID() || s.meta[MetaParent] != fr.ID.String() {
		t.Errorf("metadata = %v, want %s=%s %s=%s", s.meta, MetaRequest, sub.ID(), MetaParent, fr.ID)
	}
	if s.baggage != "reach.request="+sub.ID() || !strings.Contains(s.traceparent, "-"+fr.ID.String()+"-") {
		t.Errorf("headers: baggage %q traceparent %q", s.baggage, s.traceparent)
	}
	if s.auth != "" {
		t.Errorf("the agent got the caller's Authorization %q", s.auth)
	}
	if s.version != "1.0" {
		t.Errorf("A2A-Version to the agent = %q", s.version)
	}
	// The frame: a delegate frame for the agent, completed with its verdict,
	// its sub-request ended, in a request of alice's.
	if fr.Kind != reach.DelegateFrame || fr.Name != "executor" || fr.State() != reach.Completed ||
		fr.Summary() != "task "+string(tk.ID)+" completed: done: ship order 1001" {
		t.Errorf("frame %s %s %s %q", fr.Kind, fr.Name, fr.State(), fr.Summary())
	}
	if sub.State() != "completed" || fr.Request.Principal() != "alice" || sub.Agent() != "executor" {
		t.Errorf("sub-request %s state %s, principal %s", sub.ID(), sub.State(), fr.Request.Principal())
	}
	want := []string{"state:TASK_STATE_SUBMITTED", "state:TASK_STATE_WORKING", "state:TASK_STATE_COMPLETED"}
	eventually(t, "the task's states in the audit", func() bool { return slices.Equal(h.audit.kinds(tk.ID), want) })
}

// Streaming passes the agent's events on, and a 0.3 client is served
// through the compatibility layer.
func TestStreamAndCompat(t *testing.T) {
	h := newHarness(t, nil, "executor")
	for _, v03 := range []bool{false, true} {
		var states []a2a.TaskState
		var arts int
		req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo hi"))}
		for ev, err := range h.client("executor", "bob", v03).SendStreamingMessage(t.Context(), req) {
			if err != nil {
				t.Fatal(err)
			}
			switch e := ev.(type) {
			case *a2a.Task:
				states = append(states, e.Status.State)
			case *a2a.TaskStatusUpdateEvent:
				states = append(states, e.Status.State)
			case *a2a.TaskArtifactUpdateEvent:
				arts++
			}
		}
		want := []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateCompleted}
		if !slices.Equal(states, want) || arts != 1 {
			t.Errorf("v0.3 %v: states %v artifacts %d, want %v and 1", v03, states, arts, want)
		}
	}
	// 0.3 out to the agent is still 1.0 (what its card offers).
	for _, s := range h.agents["executor"].seen() {
		if s.version != "1.0" {
			t.Errorf("A2A-Version to the agent = %q", s.version)
		}
	}
}

// rpc posts a raw JSON-RPC body to path with headers, and returns the
// decoded answer (the first SSE event's data for a stream).
func rpc(t *testing.T, h *harness, path string, hdr map[string]string, body string) (map[string]any, http.Header) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, h.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if d, ok := bytes.CutPrefix(b, []byte("data: ")); ok {
		b, _, _ = bytes.Cut(d, []byte("\n"))
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("POST %s: %s is not JSON: %v", path, b, err)
	}
	return out, resp.Header
}

func rpcCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return int(c)
}

// The A2A-Version header picks the protocol: none is 0.3 (as the spec
// says) unless the method has a 1.0 name; another version is -32009. Both
// /a2a/NAME and /a2a/NAME/ serve it.
func TestVersionDispatch(t *testing.T) {
	h := newHarness(t, nil, "executor")
	send03 := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"echo v03"}]}}}`
	send10 := `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"echo v10"}]}}}`
	for _, tc := range []struct {
		name, path, version, body string
		state                     string
		code                      int
	}{
		{"0.3 without a header", "/a2a/executor", "", send03, "completed", 0},
		{"0.3 named", "/a2a/executor/", "0.3", send03, "completed", 0},
		{"1.0 named", "/a2a/executor/", "1.0", send10, "TASK_STATE_COMPLETED", 0},
		{"1.0 method without a header", "/a2a/executor", "", send10, "TASK_STATE_COMPLETED", 0},
		{"1.0 method sent as 0.3", "/a2a/executor", "0.3", send10, "", -32601},
		{"an unknown version", "/a2a/executor", "2.0", send10, "", -32009},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tc.version != "" {
				hdr["A2A-Version"] = tc.version
			}
			out, _ := rpc(t, h, tc.path, hdr, tc.body)
			if got := rpcCode(out); got != tc.code {
				t.Fatalf("error code %d, want %d: %v", got, tc.code, out)
			}
			if tc.state == "" {
				return
			}
			res, _ := out["result"].(map[string]any)
			if tk, ok := res["task"].(map[string]any); ok {
				res = tk
			}
			st, _ := res["status"].(map[string]any)
			if st["state"] != tc.state {
				t.Errorf("state %v, want %s: %v", st["state"], tc.state, out)
			}
		})
	}
}

// The body is bounded before the SDK reads it; the answer says so.
func TestBodyLimit(t *testing.T) {
	h := newHarness(t, nil, "executor")
	h.g.opts.MaxBodyBytes = 1024
	big := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("x", 2000) + `"}]}}}`
	out, _ := rpc(t, h, "/a2a/executor", map[string]string{"A2A-Version": "1.0"}, big)
	if rpcCode(out) != -32600 || !strings.Contains(out["error"].(map[string]any)["message"].(string), "at most 1024") {
		t.Fatalf("answer = %v", out)
	}
	if n := len(h.agents["executor"].seen()); n != 0 {
		t.Errorf("the agent got %d messages", n)
	}
}

// The card is the agent's, served at reach's URL in the 1.0 and 0.3
// shapes, with reach's extension, without the agent's push notifications,
// security schemes or signatures.
func TestCard(t *testing.T) {
	h := newHarness(t, nil, "executor")
	resp, err := http.Get(h.srv.URL + "/a2a/executor/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	want := h.srv.URL + "/a2a/executor"
	ifs, _ := card["supportedInterfaces"].([]any)
	var versions []string
	for _, i := range ifs {
		m := i.(map[string]any)
		if m["url"] != want {
			t.Errorf("interface url %v, want %s", m["url"], want)
		}
		versions = append(versions, m["protocolVersion"].(string))
	}
	if !slices.Equal(versions, []string{"1.0", "0.3"}) || card["url"] != want || card["protocolVersion"] != "0.3" {
		t.Errorf("versions %v, url %v, protocolVersion %v", versions, card["url"], card["protocolVersion"])
	}
	caps, _ := card["capabilities"].(map[string]any)
	exts, _ := caps["extensions"].([]any)
	if card["name"] != "executor" || caps["pushNotifications"] == true || card["securitySchemes"] != nil ||
		len(exts) != 1 || exts[0].(map[string]any)["uri"] != Extension {
		t.Errorf("card = %v", card)
	}
	// An unknown agent is a 404 that names the agents.
	resp2, _ := http.Get(h.srv.URL + "/a2a/executer/.well-known/agent-card.json")
	b, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	if resp2.StatusCode != 404 || !strings.Contains(string(b), "Did you mean executor?") {
		t.Errorf("unknown agent: %d %s", resp2.StatusCode, b)
	}
}

// A caller that activates reach's extension gets it echoed and reach's ids
// in the task's metadata.
func TestExtensionActivation(t *testing.T) {
	h := newHarness(t, nil, "executor")
	out, hdr := rpc(t, h, "/a2a/executor", map[string]string{"A2A-Version": "1.0", "A2A-Extensions": Extension},
		`{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"echo x"}]}}}`)
	if hdr.Get("A2A-Extensions") != Extension {
		t.Errorf("A2A-Extensions = %q", hdr.Get("A2A-Extensions"))
	}
	tk := out["result"].(map[string]any)["task"].(map[string]any)
	md, _ := tk["metadata"].(map[string]any)
	if s, _ := md[MetaRequest].(string); !strings.HasPrefix(s, "req_") || len(md[MetaFrame].(string)) != 16 {
		t.Errorf("metadata = %v", md)
	}
}

// A message with reach's context is a hand-off from the caller's place:
// handing a task to an agent already on the stack is refused as its
// contract says, and the refusal is a REJECTED task the caller can read.
func TestReentryRefused(t *testing.T) {
	h := newHarness(t, nil, "planner", "executor")
	planner := h.sendMsg("planner", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), true)
	h.working("planner")
	sub := h.g.tasks.get("planner", planner.ID, Owner{"alice", ""}).req
	// The planner hands a sub-task to the executor, passing reach's context on.
	exec := h.sendMsg("executor", "alice", &a2a.Message{ID: "m1", Role: a2a.MessageRoleUser, Parts: a2a.ContentParts{a2a.NewTextPart("slow")},
		Metadata: map[string]any{MetaRequest: sub.ID()}}, true)
	h.working("executor")
	esub := h.g.tasks.get("executor", exec.ID, Owner{"alice", ""}).req
	if esub.Parent() != sub {
		t.Fatalf("the executor's hand-off is not under the planner's: parent %v", esub.Parent())
	}
	// The executor hands work back to the planner: planner is not reentrant.
	tk := h.send("planner", "alice", "echo plan again", map[string]any{MetaRequest: esub.ID()})
	if tk.Status.State != a2a.TaskStateRejected || !strings.HasPrefix(string(tk.ID), "reach-") {
		t.Fatalf("re-entry: %s %s", tk.ID, tk.Status.State)
	}
	text := statusText(tk)
	for _, want := range []string{"reach refused to hand this task to agent planner", "already on the delegation stack", "not reentrant", "Finish this step"} {
		if !strings.Contains(text, want) {
			t.Errorf("refusal %q lacks %q", text, want)
		}
	}
	if r, _ := tk.Status.Message.Metadata[MetaRefusal].(map[string]any); r["code"] != "agent_reentrancy" || r["guard"] != "graph" {
		t.Errorf("refusal metadata = %v", tk.Status.Message.Metadata)
	}
	if n := len(h.agents["planner"].seen()); n != 1 {
		t.Errorf("the planner got %d messages, want 1 (the refused one never reached it)", n)
	}
	// The refusal is a task of reach's: readable, final, listed.
	if st := h.state("planner", "alice", tk.ID); st != a2a.TaskStateRejected {
		t.Errorf("GetTask of the refusal: %s", st)
	}
	if _, err := h.client("planner", "alice", false).CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: tk.ID}); err == nil {
		t.Error("a refusal was cancelable")
	}
	eventually(t, "the refusal in the audit", func() bool { return slices.Equal(h.audit.kinds(tk.ID), []string{"refused:TASK_STATE_REJECTED"}) })
}

// An agent that does not pass reach's context on is linked where the
// protocol allows: a message naming a task reach forwarded (referenceTaskIds
// or contextId, its caller's or the one reach gave the agent) comes from
// that task's hand-off. Another caller naming it is not linked.
func TestLinkWithoutMetadata(t *testing.T) {
	for _, by := range []string{"referenceTaskIds", "contextId", "agentContextId"} {
		t.Run(by, func(t *testing.T) {
			h := newHarness(t, func(a *Agent) { a.Reentrancy = reach.Reentrant }, "planner", "executor")
			planner := h.sendMsg("planner", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), true)
			h.working("planner")
			ptask := h.g.tasks.get("planner", planner.ID, Owner{"alice", ""})
			name := func(m *a2a.Message) *a2a.Message {
				switch by {
				case "contextId":
					m.ContextID = ptask.ctxID
				case "agentContextId": // as the planner would pass on what it got
					m.ContextID = ptask.upCtx
				default:
					m.ReferenceTasks = []a2a.TaskID{planner.ID}
				}
				return m
			}
			exec := h.sendMsg("executor", "alice", name(a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow"))), true)
			h.working("executor")
			etask := h.g.tasks.get("executor", exec.ID, Owner{"alice", ""})
			if etask.req.Parent() != ptask.req {
				t.Fatalf("not linked by %s", by)
			}
			// executor -> planner with the planner's own task: a cycle, with
			// another tracer's traceparent on the call.
			back := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow"))
			back.ReferenceTasks = []a2a.TaskID{exec.ID}
			ctx := a2aclient.AttachServiceParams(t.Context(), a2aclient.ServiceParams{"traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}})
			res, err := h.client("planner", "alice", false).SendMessage(ctx, &a2a.SendMessageRequest{Message: back, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
			if err != nil {
				t.Fatal(err)
			}
			tk := res.(*a2a.Task)
			if tk.Status.State != a2a.TaskStateRejected || !strings.Contains(statusText(tk), "cycle") {
				t.Fatalf("cycle: %s %q", tk.Status.State, statusText(tk))
			}
			// bob naming alice's task or context is not linked to it: a
			// new request. (Her context, which her task at the executor is
			// in now, is bob's own there under the same name, in another
			// context at the agent: TestA2AContextsPerPrincipal.)
			tk = h.sendMsg("executor", "bob", name(a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo bob"))), false)
			if by != "referenceTaskIds" {
				seen := h.agents["executor"].seen()
				if bob, alice := seen[len(seen)-1], seen[0]; bob.ctx == alice.ctx {
					t.Errorf("bob's message reached the executor in alice's context %q", alice.ctx)
				}
			}
			if tk.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("bob: %s %q", tk.Status.State, statusText(tk))
			}
			btask := h.g.tasks.get("executor", tk.ID, Owner{"bob", ""})
			if btask.req.Parent().Principal() != "bob" || btask.req.Parent().Parent() != nil {
				t.Errorf("bob's hand-off is in %s of %s", btask.req.Parent().ID(), btask.req.Parent().Principal())
			}
		})
	}
}

// The same sub-task handed to the same agent and coming back with the same
// verdict is refused the third time (the planner/executor/verifier
// livelock), with the verdict quoted.
func TestThirdRoundRefused(t *testing.T) {
	h := newHarness(t, nil, "verifier")
	_, root, err := h.rt.Begin(t.Context(), &reach.RequestOptions{Agent: "planner", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer root.End()
	meta := map[string]any{MetaRequest: root.ID()}
	for i := range 2 {
		if tk := h.send("verifier", "alice", "say REJECTED: no tracking number", meta); tk.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("round %d: %s", i+1, tk.Status.State)
		}
	}
	tk := h.send("verifier", "alice", "say REJECTED: no tracking number", meta)
	if tk.Status.State != a2a.TaskStateRejected || !strings.Contains(statusText(tk), "REJECTED: no tracking number") ||
		!strings.Contains(statusText(tk), "accept the last result") {
		t.Fatalf("third round: %s %q", tk.Status.State, statusText(tk))
	}
	if n := len(h.agents["verifier"].seen()); n != 2 {
		t.Errorf("the verifier got %d messages, want 2", n)
	}
}

// A hand-off to an agent with a budget gets it carved from the caller's;
// a stopped request refuses new hand-offs.
func TestBudgetAndStoppedCaller(t *testing.T) {
	h := newHarness(t, func(a *Agent) { a.Budget = &reach.Budget{ToolCalls: 3, Turns: 2} }, "executor")
	_, root, _ := h.rt.Begin(t.Context(), &reach.RequestOptions{Principal: "alice", Budget: &reach.Budget{ToolCalls: 10, Turns: 1}})
	defer root.End()
	h.sendMsg("executor", "alice", &a2a.Message{ID: "m", Role: a2a.MessageRoleUser, Parts: a2a.ContentParts{a2a.NewTextPart("slow")},
		Metadata: map[string]any{MetaRequest: root.ID()}}, true)
	h.working("executor")
	sub := root.Children()[0]
	if b := sub.Budget(); b.ToolCalls != 3 || b.Turns != 1 {
		t.Errorf("carved budget %+v, want 3 tool calls and the caller's 1 turn", b)
	}
	root.Stop(reach.Soft, "test", "no more")
	tk := h.send("executor", "alice", "echo more", map[string]any{MetaRequest: root.ID()})
	if tk.Status.State != a2a.TaskStateRejected || !strings.Contains(statusText(tk), "was stopped (soft)") {
		t.Fatalf("after a soft stop: %s %q", tk.Status.State, statusText(tk))
	}
}

// A link naming a request of another caller is refused.
func TestLinkOwner(t *testing.T) {
	h := newHarness(t, nil, "executor")
	_, root, _ := h.rt.Begin(t.Context(), &reach.RequestOptions{Principal: "alice"})
	defer root.End()
	tk := h.send("executor", "mallory", "echo x", map[string]any{MetaRequest: root.ID()})
	if tk.Status.State != a2a.TaskStateRejected || !strings.Contains(statusText(tk), "not your request") {
		t.Fatalf("mallory in alice's request: %s %q", tk.Status.State, statusText(tk))
	}
	if len(root.Children()) != 0 {
		t.Error("a hand-off was made in alice's request")
	}
}

// Tasks belong to their caller: another sees, lists and cancels none of
// them.
func TestTasksAreTheCallers(t *testing.T) {
	h := newHarness(t, nil, "executor")
	tk := h.send("executor", "alice", "echo mine", nil)
	bob := h.client("executor", "bob", false)
	if _, err := bob.GetTask(t.Context(), &a2a.GetTaskRequest{ID: tk.ID}); err == nil {
		t.Error("bob read alice's task")
	}
	if _, err := bob.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: tk.ID}); err == nil {
		t.Error("bob canceled alice's task")
	}
	for who, n := range map[string]int{"alice": 1, "bob": 0} {
		res, err := h.client("executor", who, false).ListTasks(t.Context(), &a2a.ListTasksRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tasks) != n || res.TotalSize != n {
			t.Errorf("%s lists %d tasks, want %d", who, len(res.Tasks), n)
		}
	}
}

// A message answer (no task) ends the hand-off with it; an agent asking
// for input keeps the hand-off open for the next message of the task.
func TestMessageAndInput(t *testing.T) {
	h := newHarness(t, nil, "executor")
	res, err := h.client("executor", "alice", false).SendMessage(t.Context(), &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("message hello"))})
	if m, ok := res.(*a2a.Message); err != nil || !ok || textOf(m.Parts) != "reply: hello" {
		t.Fatalf("message answer: %v %v", res, err)
	}
	tk := h.send("executor", "alice", "input", nil)
	if tk.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("input: %s", tk.Status.State)
	}
	rec := h.g.tasks.get("executor", tk.ID, Owner{"alice", ""})
	if rec.req.State() != reach.RequestRunning {
		t.Errorf("the hand-off ended while the task waits for input: %s", rec.req.State())
	}
	// The stream of the answer goes on until the task moves past the
	// input it asked for.
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("blue"))
	m.TaskID, m.ContextID = tk.ID, tk.ContextID
	var last a2a.TaskState
	var text string
	for ev, err := range h.client("executor", "alice", false).SendStreamingMessage(t.Context(), &a2a.SendMessageRequest{Message: m}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *a2a.Task:
			last, text = e.Status.State, textOfMessage(e.Status.Message)
		case *a2a.TaskStatusUpdateEvent:
			last, text = e.Status.State, textOfMessage(e.Status.Message)
		}
	}
	if last != a2a.TaskStateCompleted || text != "thanks for blue" {
		t.Fatalf("after the input: %s %q", last, text)
	}
	if rec.req.State() != "completed" || rec.frame.State() != reach.Completed {
		t.Errorf("hand-off %s frame %s", rec.req.State(), rec.frame.State())
	}
	// A final task takes no more messages.
	m2 := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("red"))
	m2.TaskID = tk.ID
	if _, err := h.client("executor", "alice", false).SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m2}); err == nil {
		t.Error("a completed task took a message")
	}
}

// An agent that cannot be reached, or whose stream breaks, gives the
// caller a failed task that says so.
func TestAgentFailures(t *testing.T) {
	h := newHarness(t, nil, "executor")
	tk := h.send("executor", "alice", "fail", nil)
	if tk.Status.State != a2a.TaskStateFailed || !strings.Contains(statusText(tk), "reach lost agent executor's task") {
		t.Errorf("broken stream: %s %q", tk.Status.State, statusText(tk))
	}
	g, err := New(t.Context(), &Options{Agents: []Agent{{Name: "gone", URL: "http://127.0.0.1:1"}}, Runtime: h.rt, Link: testLinker{h.rt}, Identity: testIdentity{}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	old := h.g
	defer func() { h.g = old }()
	h.g = g
	tk = h.send("gone", "alice", "echo x", nil)
	if tk.Status.State != a2a.TaskStateFailed || !strings.Contains(statusText(tk), "reach could not hand this message to agent gone") {
		t.Errorf("unreachable: %s %q", tk.Status.State, statusText(tk))
	}
}

// An agent whose card says it does not stream is polled.
func TestNonStreamingAgent(t *testing.T) {
	h := newHarness(t, nil, "poller")
	tk := h.send("poller", "alice", "echo polled", nil)
	if tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("state %s %q", tk.Status.State, statusText(tk))
	}
}

// Past MaxTasks the oldest ended tasks are forgotten (GetTask then says
// not found); live ones are kept.
func TestTasksAreForgottenPastTheLimit(t *testing.T) {
	h := newHarness(t, nil, "executor")
	h.g.tasks.max = 4
	live := h.sendMsg("executor", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), true)
	h.working("executor")
	var ids []a2a.TaskID
	for i := range 12 {
		ids = append(ids, h.send("executor", "alice", fmt.Sprintf("echo %d", i), nil).ID)
	}
	if _, err := h.client("executor", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: ids[0]}); err == nil {
		t.Error("the oldest ended task is still kept")
	}
	if st := h.state("executor", "alice", ids[11]); st != a2a.TaskStateCompleted {
		t.Errorf("the newest: %s", st)
	}
	if st := h.state("executor", "alice", live.ID); st != a2a.TaskStateWorking {
		t.Errorf("the live task: %s", st)
	}
}

// What the gateway reads of one answer of an agent is bounded.
func TestAnswerIsCapped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 100)) }))
	defer srv.Close()
	c := &http.Client{Transport: capped{http.DefaultTransport, 64}}
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if len(b) != 64 || err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("read %d bytes, err %v; want 64 and an error", len(b), err)
	}
}

// GET /v1/agents shows an agent's budget as the configuration and a
// request's view write it: its wall clock a duration ("2m0s"), not
// 120000000000 nanoseconds.
func TestStatusBudgetWall(t *testing.T) {
	rt := reach.New(nil)
	g, err := New(t.Context(), &Options{Agents: []Agent{{Name: "a", URL: "http://127.0.0.1:1", Budget: &reach.Budget{ToolCalls: 20, Wall: 2 * time.Minute}}},
		Runtime: rt, Link: testLinker{rt}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	b, err := json.Marshal(g.Agents(t.Context())[0].Budget)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"tool_calls":20,"wall":"2m0s"}`; string(b) != want {
		t.Errorf("budget = %s, want %s", b, want)
	}
}

// Past MaxTasks the ended tasks go from the principals that keep the most
// of them: alice's many short tasks push out her own oldest, and bob's
// two, older than all of hers, are still found by GetTask and ListTasks.
// Before, the oldest ended tasks went whoever's they were: bob's first.
func TestEndedTasksBoundedPerPrincipal(t *testing.T) {
	h := newHarness(t, nil, "executor")
	h.g.tasks.max = 8
	var bobs []a2a.TaskID
	for i := range 2 {
		bobs = append(bobs, h.send("executor", "bob", fmt.Sprintf("echo bob %d", i), nil).ID)
	}
	var alices []a2a.TaskID
	for i := range 40 {
		alices = append(alices, h.send("executor", "alice", fmt.Sprintf("echo alice %d", i), nil).ID)
	}
	for _, id := range bobs {
		if st := h.state("executor", "bob", id); st != a2a.TaskStateCompleted {
			t.Errorf("bob's task %s after alice's 40: %q, want still kept (completed)", id, st)
		}
	}
	res, err := h.client("executor", "bob", false).ListTasks(t.Context(), &a2a.ListTasksRequest{})
	if err != nil || len(res.Tasks) != 2 {
		t.Errorf("bob's ListTasks: %v, %v; want his 2", res, err)
	}
	if _, err := h.client("executor", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: alices[0]}); err == nil {
		t.Error("alice's oldest task is still kept past the bound")
	}
	if st := h.state("executor", "alice", alices[39]); st != a2a.TaskStateCompleted {
		t.Errorf("alice's newest: %q", st)
	}
	if n := len(h.g.tasks.order); n > 10 {
		t.Errorf("%d tasks kept, want at most 10 (8 and a quarter)", n)
	}
}

// fairDrop lets excess go, from the owners over a level that all those
// above it share.
func TestFairDrop(t *testing.T) {
	for _, tc := range []struct {
		ended  map[string]int
		excess int
		want   map[string]int
	}{
		{map[string]int{"a": 40, "b": 2}, 32, map[string]int{"a": 32}},
		{map[string]int{"a": 10, "b": 6, "c": 1}, 6, map[string]int{"a": 5, "b": 1}},
		{map[string]int{"a": 3, "b": 3}, 10, map[string]int{"a": 3, "b": 3}},
		{map[string]int{"a": 5, "b": 5}, 4, map[string]int{"a": 2, "b": 2}},
	} {
		got := fairDrop(tc.ended, tc.excess)
		maps.DeleteFunc(got, func(_ string, n int) bool { return n == 0 })
		if !maps.Equal(got, tc.want) {
			t.Errorf("fairDrop(%v, %d) = %v, want %v", tc.ended, tc.excess, got, tc.want)
		}
	}
	// Ties at the level give one more each, whichever they are.
	got := fairDrop(map[string]int{"a": 4, "b": 4, "c": 4}, 2)
	if got["a"]+got["b"]+got["c"] != 2 || got["a"] > 1 || got["b"] > 1 || got["c"] > 1 {
		t.Errorf("fairDrop of three at 4 by 2: %v", got)
	}
}
