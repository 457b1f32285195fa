package a2a

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// hostileAgent is a fakeAgent whose streamed answer to a message is
// stream's: an agent that sends what a well-behaved one would not.
type hostileAgent struct {
	*fakeAgent
	stream func(ctx context.Context, m *a2a.Message) iter.Seq2[a2a.Event, error]
}

func (h *hostileAgent) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return h.stream(ctx, req.Message)
}

// newHostileHarness is a harness whose one agent, "hostile", answers every
// message with stream, over the A2A Go SDK's JSON-RPC server.
func newHostileHarness(t *testing.T, opt func(*Options), stream func(ctx context.Context, m *a2a.Message) iter.Seq2[a2a.Event, error]) *harness {
	t.Helper()
	f := newFakeAgent(t, "hostile", true) // the other methods, and the card's shape
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	card := *f.card
	card.SupportedInterfaces = []*a2a.AgentInterface{{URL: srv.URL + "/", ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version}}
	mux.Handle("GET "+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(&card))
	mux.Handle("POST /", a2asrv.NewJSONRPCHandler(&hostileAgent{fakeAgent: f, stream: stream}))
	return newHarnessWith(t, func(o *Options) {
		o.Agents[0].URL = srv.URL
		if opt != nil {
			opt(o)
		}
	}, nil, "hostile")
}

// TestA2ANullArtifactFromAgent: an agent whose task lists a null artifact
// (`"artifacts":[null]`, which the SDK decodes as a nil *Artifact), then
// streams an artifact and completes, has its task completed at reach with
// the artifact it streamed, the null one dropped. Before, reach
// dereferenced the nil artifact (the next artifact's id lookup, and the
// loop guard's verdict of the last one) and the gateway's process died: one
// hostile agent took every caller's tasks down with it.
func TestA2ANullArtifactFromAgent(t *testing.T) {
	h := newHostileHarness(t, nil, func(ctx context.Context, m *a2a.Message) iter.Seq2[a2a.Event, error] {
		return func(yield func(a2a.Event, error) bool) {
			info := a2a.TaskInfo{TaskID: a2a.NewTaskID(), ContextID: "ctx-null"}
			_ = yield(&a2a.Task{ID: info.TaskID, ContextID: info.ContextID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking},
				History: []*a2a.Message{m, nil}, Artifacts: []*a2a.Artifact{nil}}, nil) &&
				yield(&a2a.TaskArtifactUpdateEvent{TaskID: info.TaskID, ContextID: info.ContextID,
					Artifact: &a2a.Artifact{ID: "a1", Parts: a2a.ContentParts{a2a.NewTextPart("the answer")}}}, nil) &&
				// Its whole view again, the null artifact last (the loop
				// guard's verdict reads the last artifact's text).
				yield(&a2a.Task{ID: info.TaskID, ContextID: info.ContextID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking},
					Artifacts: []*a2a.Artifact{{ID: "a1", Parts: a2a.ContentParts{a2a.NewTextPart("the answer")}}, nil}}, nil) &&
				yield(a2a.NewStatusUpdateEvent(info, a2a.TaskStateCompleted, nil), nil)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // before the fix, the send hung
	defer cancel()
	res, err := h.client("hostile", "alice", false).SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))})
	if err != nil {
		t.Fatalf("the send: %v", err)
	}
	tk, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("the send answered %T, want a task", res)
	}
	if tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("the task: %s %q, want completed", tk.Status.State, statusText(tk))
	}
	for i, a := range tk.Artifacts {
		if a == nil {
			t.Errorf("artifact %d passed on null", i)
		}
	}
	for i, m := range tk.History {
		if m == nil {
			t.Errorf("history message %d passed on null", i)
		}
	}
	if s := artifactsText(tk); s != "the answer" {
		t.Errorf("the task's artifacts say %q, want the one streamed", s)
	}
	got, err := h.client("hostile", "alice", false).GetTask(ctx, &a2a.GetTaskRequest{ID: tk.ID})
	if err != nil || got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("GetTask after: %v, %v", got, err)
	}
	if s := artifactsText(got); s != "the answer" {
		t.Errorf("GetTask's artifacts say %q, want the one streamed", s)
	}
}

func artifactsText(tk *a2a.Task) string {
	var b strings.Builder
	for _, a := range tk.Artifacts {
		if a != nil {
			b.WriteString(textOf(a.Parts))
		}
	}
	return b.String()
}

// TestA2AOtherCallersContextAndTasksRefused: a caller naming another
// principal's task (referenceTaskIds) in a new message has it refused at
// reach, a REJECTED task saying what it named and what to send instead,
// and the agent never gets it; reach passed it on as it was, and the
// agent, which sees every caller as reach, took bob's message as about
// alice's task. Through another gateway on the same store, a referenced
// task of alice's is refused too. Naming her context (contextId) puts
// bob's message in a context of his own at the agent, never in hers
// (TestA2AContextsPerPrincipal). Alice naming her own goes on.
func TestA2AOtherCallersContextAndTasksRefused(t *testing.T) {
	st := store.NewMemory()
	a := newHarnessWith(t, func(o *Options) { o.Tasks = st }, nil, "executor")
	b := &harness{t: t, rt: reach.New(nil), agents: a.agents, audit: &memAudit{}}
	g, err := New(t.Context(), &Options{Agents: []Agent{{Name: "executor", URL: a.agents["executor"].srv.URL}}, Runtime: b.rt,
		Link: testLinker{b.rt}, Identity: testIdentity{}, CancelTimeout: time.Second, Tasks: st})
	if err != nil {
		t.Fatal(err)
	}
	b.g = g
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.g.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), whoKey{}, r.Header.Get("X-Who"))))
	}))
	t.Cleanup(func() { b.srv.Close(); b.g.Close() })

	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("input"))
	m.ContextID = "session-1"
	alice := a.sendMsg("executor", "alice", m, false)
	if alice.Status.State != a2a.TaskStateInputRequired || alice.ContextID != "session-1" {
		t.Fatalf("alice's task: %s in %q", alice.Status.State, alice.ContextID)
	}
	aliceCtx := a.agents["executor"].seen()[0].ctx
	m = a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo what did alice say?"))
	m.ContextID = "session-1"
	if tk := a.sendMsg("executor", "bob", m, false); tk.Status.State != a2a.TaskStateCompleted || tk.ContextID != "session-1" {
		t.Errorf("bob naming context session-1: %s in %q, want completed in his own session-1", tk.Status.State, tk.ContextID)
	}
	seen := a.agents["executor"].seen()
	if c := seen[len(seen)-1].ctx; c == aliceCtx {
		t.Errorf("bob's message reached the agent in alice's context %q", c)
	}
	sent := len(seen)
	refused := func(h *harness, what string, m *a2a.Message) {
		t.Helper()
		tk := h.sendMsg("executor", "bob", m, false)
		if tk.Status.State != a2a.TaskStateRejected || !strings.Contains(statusText(tk), what+", which is another caller's") ||
			!strings.Contains(statusText(tk), "Send it without") {
			t.Errorf("bob naming %s: %s %q, want rejected saying so", what, tk.Status.State, statusText(tk))
		}
	}
	m = a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo summarize that task"))
	m.ReferenceTasks = []a2a.TaskID{alice.ID}
	refused(a, "task "+string(alice.ID), m)
	refused(b, "task "+string(alice.ID), m) // b holds no task of alice's: the store knows it
	if n := len(a.agents["executor"].seen()); n != sent {
		t.Errorf("the agent got %d messages of bob's naming alice's task", n-sent)
	}
	// Alice's own context and task go on.
	m = a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo more"))
	m.ContextID, m.ReferenceTasks = "session-1", []a2a.TaskID{alice.ID}
	if tk := a.sendMsg("executor", "alice", m, false); tk.Status.State != a2a.TaskStateCompleted {
		t.Errorf("alice naming her own: %s %q", tk.Status.State, statusText(tk))
	}
	// What held before: bob's continuation, GetTask, CancelTask,
	// SubscribeToTask and push configs of alice's task, on either gateway,
	// find nothing of hers, and her task still waits for her.
	live := a.sendMsg("executor", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("input")), false)
	eventually(t, "alice's task stored", func() bool {
		rec, err := st.GetTask(t.Context(), "executor", string(live.ID))
		return err == nil && rec.State == string(a2a.TaskStateInputRequired)
	})
	for _, h := range []*harness{a, b} {
		c := h.client("executor", "bob", false)
		m = a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("blue"))
		m.TaskID, m.ContextID = live.ID, live.ContextID
		if _, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m}); err == nil {
			t.Errorf("bob continued alice's task")
		}
		if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: live.ID}); err == nil {
			t.Errorf("bob got alice's task")
		}
		if _, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: live.ID}); err == nil {
			t.Errorf("bob canceled alice's task")
		}
		for ev, err := range c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: live.ID}) {
			if err == nil {
				t.Errorf("bob subscribed to alice's task: %T", ev)
			}
			break
		}
		if _, err := c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: live.ID, URL: "http://127.0.0.1:1/hook"}); err == nil {
			t.Errorf("bob set a push config on alice's task")
		}
		if l, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{}); err != nil {
			t.Errorf("bob's ListTasks: %v", err)
		} else if slices.ContainsFunc(l.Tasks, func(x *a2a.Task) bool { return x.ID == live.ID }) {
			t.Errorf("bob's ListTasks lists alice's task")
		}
	}
	if s := a.state("executor", "alice", live.ID); s != a2a.TaskStateInputRequired {
		t.Errorf("alice's task after bob's tries: %s", s)
	}
}

// TestCardMovedToAnotherHostNotFollowed: an agent whose card, once reach
// follows it, moves its JSON-RPC interface to another origin (here another
// agent's server) is not followed there: the callers' messages go on to
// the origin reach had, and the card reach serves is the one it had. Reach
// followed the new card within CardTTL, sending every caller's messages to
// a host the operator never configured, on the card's word alone. A change
// that stays at the origin (a new skill) is followed.
func TestCardMovedToAnotherHostNotFollowed(t *testing.T) {
	h := newHarnessWith(t, func(o *Options) { o.CardTTL = 20 * time.Millisecond }, nil, "executor", "elsewhere")
	if tk := h.send("executor", "alice", "say hi", nil); tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("first task: %s", tk.Status.State)
	}
	other := h.agents["elsewhere"].srv.URL + "/"
	h.agents["executor"].setCard(func(c *a2a.AgentCard) {
		c.SupportedInterfaces = []*a2a.AgentInterface{{URL: other, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version}}
		c.Description = "moved"
	})
	ag := h.g.agents["executor"]
	for range 3 {
		time.Sleep(30 * time.Millisecond)
		if err := ag.resolve(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	before := len(h.agents["elsewhere"].seen())
	if tk := h.send("executor", "alice", "say again", nil); tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("a task after the move: %s %q", tk.Status.State, statusText(tk))
	}
	if n := len(h.agents["elsewhere"].seen()) - before; n != 0 {
		t.Errorf("the other host got %d messages sent to executor", n)
	}
	if got := h.agents["executor"].seen(); len(got) != 2 || got[1].text != "say again" {
		t.Errorf("executor got %d messages, want its 2", len(got))
	}
	ag.mu.Lock()
	desc := ag.card.Description
	ag.mu.Unlock()
	if desc == "moved" {
		t.Error("reach took the moved card")
	}
	// Back at its origin, with a new skill: followed.
	h.agents["executor"].setCard(func(c *a2a.AgentCard) {
		c.SupportedInterfaces = []*a2a.AgentInterface{{URL: h.agents["executor"].srv.URL + "/", ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version}}
		c.Skills = append(slices.Clone(c.Skills), a2a.AgentSkill{ID: "s2", Name: "new", Description: "d", Tags: []string{"t"}})
	})
	if err := ag.resolve(t.Context()); err != nil {
		t.Fatal(err)
	}
	ag.mu.Lock()
	skills := len(ag.card.Skills)
	ag.mu.Unlock()
	if skills != 2 {
		t.Errorf("the card with a new skill at the same origin: %d skills, want 2", skills)
	}
}

// TestCardGrownOrLoopingKeepsCard: an agent whose card, once reach has it,
// grows past maxCardBytes, or redirects to itself without end, has the
// card reach has kept (and its tasks go on through it); an agent first
// seen so is refused with an error saying what the card did. (Held.)
func TestCardGrownOrLoopingKeepsCard(t *testing.T) {
	var mode atomic.Value
	mode.Store("ok")
	f := newFakeAgent(t, "executor", true)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	card := *f.card
	card.SupportedInterfaces = []*a2a.AgentInterface{{URL: srv.URL + "/", ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version}}
	good, _ := json.Marshal(&card)
	big := *f.card
	big.Description = strings.Repeat("x", maxCardBytes)
	huge, _ := json.Marshal(&big)
	mux.HandleFunc("GET "+a2asrv.WellKnownAgentCardPath, func(w http.ResponseWriter, r *http.Request) {
		switch mode.Load() {
		case "big":
			w.Write(huge)
		case "loop":
			http.Redirect(w, r, r.URL.Path, http.StatusFound)
		default:
			w.Write(good)
		}
	})
	mux.Handle("POST /", a2asrv.NewJSONRPCHandler(f))
	for _, m := range []string{"big", "loop"} {
		t.Run(m, func(t *testing.T) {
			// The card is bad before the gateway starts: it fetches the
			// card in the background as it starts, and a fetch that came
			// before the card went bad kept the good one (the first send
			// then completed: 1 run in 6 of the package).
			mode.Store(m)
			h := newHarnessWith(t, func(o *Options) { o.Agents[0].URL = srv.URL }, nil, "executor")
			tk := h.send("executor", "alice", "say hi", nil)
			if tk.Status.State != a2a.TaskStateFailed || !strings.Contains(statusText(tk), "could not hand this message") {
				t.Errorf("first seen with such a card: %s %q", tk.Status.State, statusText(tk))
			}
			mode.Store("ok")
			eventually(t, "a task through its card, once the failed fetch is past", func() bool {
				return h.send("executor", "alice", "say hi", nil).Status.State == a2a.TaskStateCompleted
			})
			mode.Store(m)
			if err := h.g.agents["executor"].resolve(t.Context()); err != nil {
				t.Errorf("a refresh that failed: %v, want the card kept", err)
			}
			if tk := h.send("executor", "alice", "say again", nil); tk.Status.State != a2a.TaskStateCompleted {
				t.Errorf("after the %s card: %s %q", m, tk.Status.State, statusText(tk))
			}
			mode.Store("ok")
		})
	}
}
