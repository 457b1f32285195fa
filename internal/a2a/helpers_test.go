package a2a

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agentreach/reach"
)

// fakeAgent is an upstream A2A agent whose behaviour the first word of a
// message picks:
//
//	echo TEXT      completes with "done: TEXT"
//	say TEXT       completes with the status message TEXT
//	slow           works until it is canceled (then CANCELED)
//	ignore         works until released; CancelTask is never answered
//	late           CancelTask answers CANCELED, and the stream then says COMPLETED
//	message TEXT   answers with a message, no task
//	input          asks for input; the next message completes it
//	ask            asks for input, the same question after every message
//	fail           the stream breaks after WORKING
//	reuse ID       answers with a new task whose id is ID (a hostile agent), then completes it (no other reply)
//	flood          streams 64 KiB chunks of one artifact until its stream ends (GetTask: 2 MiB of it)
//	nostate        answers with a task that has no state (TASK_STATE_UNSPECIFIED), then nothing until its stream ends
type fakeAgent struct {
	name    string
	srv     *httptest.Server
	release chan struct{}

	mu      sync.Mutex
	sends   []seen
	cancels []a2a.TaskID
	stop    map[a2a.TaskID]chan struct{}
	words   map[a2a.TaskID]string
	tasks   map[a2a.TaskID]*a2a.Task
	working chan a2a.TaskID // each task that reached WORKING
	card    *a2a.AgentCard  // served as it stands (setCard changes it)
	flooded chan int        // a flood's chunks, once its stream ended
	slow    time.Duration   // how long "slowask" works before it asks again (600 ms if 0)
	gated   chan struct{}   // a "gated" task's message arrived (its task not sent yet)
	gate    chan struct{}   // closed: "gated" tasks are sent
}

// seen is what the agent got with a message.
type seen struct {
	text        string
	meta        map[string]any
	reqMeta     map[string]any // the request's metadata
	traceparent string
	baggage     string
	auth        string
	reachKey    string // X-Reach-Key, if it got one
	version     string
	task        a2a.TaskID
	ctx         string // the message's contextId as the agent got it
}

func newFakeAgent(t testing.TB, name string, streaming bool) *fakeAgent {
	f := &fakeAgent{name: name, release: make(chan struct{}), stop: map[a2a.TaskID]chan struct{}{}, words: map[a2a.TaskID]string{}, tasks: map[a2a.TaskID]*a2a.Task{}, working: make(chan a2a.TaskID, 64), flooded: make(chan int, 4),
		gated: make(chan struct{}, 4), gate: make(chan struct{})}
	mux := http.NewServeMux()
	f.srv = httptest.NewServer(mux)
	card := &a2a.AgentCard{Name: name, Description: "fake " + name, Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{{URL: f.srv.URL + "/", ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version}},
		Capabilities:        a2a.AgentCapabilities{Streaming: streaming, PushNotifications: true},
		DefaultInputModes:   []string{"text"}, DefaultOutputModes: []string{"text"},
		Skills:          []a2a.AgentSkill{{ID: "s", Name: "skill-" + name, Description: "d", Tags: []string{"t"}}},
		SecuritySchemes: a2a.NamedSecuritySchemes{"key": a2a.APIKeySecurityScheme{Name: "X-Key", Location: a2a.APIKeySecuritySchemeLocationHeader}}}
	f.card = card
	mux.Handle("GET "+a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(func(context.Context) (*a2a.AgentCard, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.card, nil
	})))
	mux.Handle("POST /", a2asrv.NewJSONRPCHandler(f))
	t.Cleanup(func() {
		f.mu.Lock()
		select {
		case <-f.release:
		default:
			close(f.release)
		}
		f.mu.Unlock()
		f.srv.Close()
	})
	return f
}

var _ a2asrv.RequestHandler = (*fakeAgent)(nil)

// setCard changes the card the agent serves (a copy of it, changed by f).
func (f *fakeAgent) setCard(change func(*a2a.AgentCard)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := *f.card
	change(&c)
	f.card = &c
}

func (f *fakeAgent) record(ctx context.Context, m *a2a.Message, reqMeta map[string]any) {
	s := seen{text: textOf(m.Parts), meta: m.Metadata, reqMeta: reqMeta, task: m.TaskID, ctx: m.ContextID}
	if cc, ok := a2asrv.CallContextFrom(ctx); ok {
		get := func(k string) string {
			v, _ := cc.ServiceParams().Get(k)
			return strings.Join(v, ",")
		}
		s.traceparent, s.baggage, s.auth, s.version = get("traceparent"), get("baggage"), get("authorization"), get(a2a.SvcParamVersion)
		s.reachKey = get("x-reach-key")
	}
	f.mu.Lock()
	f.sends = append(f.sends, s)
	f.mu.Unlock()
}

func (f *fakeAgent) seen() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.sends...)
}

func (f *fakeAgent) canceled() []a2a.TaskID {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]a2a.TaskID(nil), f.cancels...)
}

func (f *fakeAgent) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	first := make(chan a2a.SendMessageResult, 1)
	done := make(chan error, 1)
	go func() { // the task goes on after an immediate answer, as an agent's would
		var err error
		for ev, e := range f.SendStreamingMessage(context.WithoutCancel(ctx), req) {
			if e != nil {
				err = e
				break
			}
			switch x := ev.(type) {
			case *a2a.Message:
				first <- x
			case *a2a.Task:
				first <- x
			}
		}
		done <- err
	}()
	r := <-first
	if _, ok := r.(*a2a.Message); ok || (req.Config != nil && req.Config.ReturnImmediately) {
		return r, nil
	}
	if err := <-done; err != nil {
		return nil, err
	}
	return f.GetTask(ctx, &a2a.GetTaskRequest{ID: r.(*a2a.Task).ID})
}

// keep records the task's latest state for GetTask.
func (f *fakeAgent) keep(ev a2a.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch e := ev.(type) {
	case *a2a.Task:
		c := *e
		f.tasks[e.ID] = &c
	case *a2a.TaskStatusUpdateEvent:
		if t := f.tasks[e.TaskID]; t != nil {
			t.Status = e.Status
		}
	}
}

func (f *fakeAgent) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield0 func(a2a.Event, error) bool) {
		yield := func(ev a2a.Event, err error) bool {
			if ev != nil {
				f.keep(ev)
			}
			return yield0(ev, err)
		}
		m := req.Message
		f.record(ctx, m, req.Metadata)
		word, rest, _ := strings.Cut(textOf(m.Parts), " ")
		if word == "message" {
			yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("reply: "+rest)), nil)
			return
		}
		id, ctxID := m.TaskID, m.ContextID
		if id == "" {
			id = a2a.NewTaskID()
		}
		if word == "reuse" { // a hostile agent: a new task under the id given (not kept: its own view of ID stays)
			info := a2a.TaskInfo{TaskID: a2a.TaskID(rest), ContextID: "ctx-" + rest}
			if yield0(&a2a.Task{ID: info.TaskID, ContextID: info.ContextID, Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}, History: []*a2a.Message{m}}, nil) {
				yield0(a2a.NewStatusUpdateEvent(info, a2a.TaskStateCompleted, a2a.NewMessageForTask(a2a.MessageRoleAgent, info, a2a.NewTextPart("taken over"))), nil)
			}
			return
		}
		if ctxID == "" {
			ctxID = "ctx-" + string(id)
		}
		if word == "nostate" && m.TaskID == "" { // a task with no state, then nothing until the stream ends
			if yield(&a2a.Task{ID: id, ContextID: ctxID, History: []*a2a.Message{m}}, nil) {
				<-ctx.Done()
			}
			return
		}
		info := a2a.TaskInfo{TaskID: id, ContextID: ctxID}
		stop := make(chan struct{})
		f.mu.Lock()
		if m.TaskID == "" {
			f.stop[id], f.words[id] = stop, word
		} else {
			stop = f.stop[id]
		}
		f.mu.Unlock()
		status := func(st a2a.TaskState, text string) bool {
			var msg *a2a.Message
			if text != "" {
				msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, info, a2a.NewTextPart(text))
			}
			return yield(a2a.NewStatusUpdateEvent(info, st, msg), nil)
		}
		if m.TaskID != "" { // the input it asked for: the task as it stands, then work
			if word == "refuse" { // an answer the agent refuses: an error, no event
				yield(nil, errors.New("refused"))
				return
			}
			f.mu.Lock()
			again := f.words[id] == "reask"
			f.mu.Unlock()
			if again { // asks again at once, no working in between
				status(a2a.TaskStateInputRequired, "which shade?")
				return
			}
			if !yield(&a2a.Task{ID: id, ContextID: ctxID, Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired}}, nil) ||
				!status(a2a.TaskStateWorking, "") {
				return
			}
			f.mu.Lock()
			first := f.words[id]
			f.mu.Unlock()
			if first == "ask" {
				status(a2a.TaskStateInputRequired, "which colour?")
				return
			}
			if first == "slowask" { // works a while (past the test's wait), then asks again
				f.mu.Lock()
				slow := cmp.Or(f.slow, 600*time.Millisecond)
				f.mu.Unlock()
				time.Sleep(slow)
				status(a2a.TaskStateInputRequired, "which shade?")
				return
			}
			status(a2a.TaskStateCompleted, "thanks for "+textOf(m.Parts))
			return
		}
		if word == "gated" { // as "transit", once the test lets its task be sent
			f.gated <- struct{}{}
			select {
			case <-f.gate:
			case <-ctx.Done():
				return
			}
		}
		if !yield(&a2a.Task{ID: id, ContextID: ctxID, Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}, History: []*a2a.Message{m}}, nil) {
			return
		}
		if !status(a2a.TaskStateWorking, "") {
			return
		}
		f.working <- id
		switch word {
		case "echo":
			if !yield(a2a.NewArtifactEvent(info, a2a.NewTextPart("echo: "+rest)), nil) {
				return
			}
			status(a2a.TaskStateCompleted, "done: "+rest)
		case "say":
			status(a2a.TaskStateCompleted, rest)
		case "parts": // two artifacts, then works until canceled
			if !yield(a2a.NewArtifactEvent(info, a2a.NewTextPart("part 1")), nil) ||
				!yield(a2a.NewArtifactEvent(info, a2a.NewTextPart("part 2")), nil) {
				return
			}
			select {
			case <-stop:
				status(a2a.TaskStateCanceled, "canceled")
			case <-ctx.Done():
			}
		case "transit", "gated": // an artifact, then works until canceled; one more artifact goes out as the cancel comes, then its canceled
			if !yield(a2a.NewArtifactEvent(info, a2a.NewTextPart("part 1")), nil) {
				return
			}
			select {
			case <-stop:
				if yield(a2a.NewArtifactEvent(info, a2a.NewTextPart("part 2")), nil) {
					status(a2a.TaskStateCanceled, "canceled")
				}
			case <-ctx.Done():
			}
		case "burst": // an artifact, then works until canceled; answers the cancel with eight artifacts of 64 KiB, then its canceled
			if !yield(a2a.NewArtifactEvent(info, a2a.NewTextPart("part 1")), nil) {
				return
			}
			select {
			case <-stop:
				for i := range 8 {
					if !yield(a2a.NewArtifactEvent(info, a2a.NewTextPart(strings.Repeat(string(rune('a'+i)), 64<<10))), nil) {
						return
					}
				}
				status(a2a.TaskStateCanceled, "canceled")
			case <-ctx.Done():
			}
		case "tardy": // as "transit", but its canceled waits for the test (release)
			if !yield(a2a.NewArtifactEvent(info, a2a.NewTextPart("part 1")), nil) {
				return
			}
			select {
			case <-stop:
				if yield(a2a.NewArtifactEvent(info, a2a.NewTextPart("part 2")), nil) {
					select {
					case <-f.release:
						status(a2a.TaskStateCanceled, "canceled")
					case <-ctx.Done():
					}
				}
			case <-ctx.Done():
			}
		case "mute": // an artifact, then works; confirms a cancel but never ends the task on its stream
			if yield(a2a.NewArtifactEvent(info, a2a.NewTextPart("part 1")), nil) {
				<-ctx.Done()
			}
		case "slow", "bigcancel":
			select {
			case <-stop:
				status(a2a.TaskStateCanceled, "canceled")
			case <-ctx.Done():
			}
		case "ignore":
			select {
			case <-f.release:
				status(a2a.TaskStateCompleted, "finished anyway")
			case <-ctx.Done():
			}
		case "late":
			select {
			case <-stop:
				time.Sleep(10 * time.Millisecond)
				status(a2a.TaskStateCompleted, "finished late")
			case <-ctx.Done():
			}
		case "input", "ask", "reask", "slowask":
			status(a2a.TaskStateInputRequired, "which colour?")
		case "fail":
			yield(nil, errors.New("boom"))
		case "flood":
			// Its view for GetTask: what it streamed, more than the bound.
			f.mu.Lock()
			f.tasks[id].Artifacts = []*a2a.Artifact{{ID: "flood", Parts: a2a.ContentParts{a2a.NewTextPart(strings.Repeat("z", 2<<20))}}}
			f.mu.Unlock()
			n := 0
			for ctx.Err() == nil {
				part := a2a.NewTextPart(strings.Repeat(string(rune('a'+n%26)), 64<<10))
				ev := &a2a.TaskArtifactUpdateEvent{TaskID: id, ContextID: ctxID, Append: n > 0,
					Artifact: &a2a.Artifact{ID: "flood", Parts: a2a.ContentParts{part}}}
				if !yield0(ev, nil) { // not kept: the agent's own memory is not the test's
					break
				}
				n++
			}
			f.flooded <- n
		default:
			status(a2a.TaskStateFailed, "unknown word "+word)
		}
	}
}

func (f *fakeAgent) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	f.mu.Lock()
	f.cancels = append(f.cancels, req.ID)
	stop, word := f.stop[req.ID], f.words[req.ID]
	f.mu.Unlock()
	if stop == nil {
		return nil, a2a.ErrTaskNotFound
	}
	if word == "ignore" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	select {
	case <-stop:
	default:
		close(stop)
	}
	if word == "bigcancel" { // a hostile agent: a confirmation of 2 MiB
		return &a2a.Task{ID: req.ID, ContextID: "ctx-" + string(req.ID), Status: a2a.TaskStatus{State: a2a.TaskStateCanceled},
			Artifacts: []*a2a.Artifact{{ID: "big", Parts: a2a.ContentParts{a2a.NewTextPart(strings.Repeat("c", 2<<20))}}}}, nil
	}
	return &a2a.Task{ID: req.ID, ContextID: "ctx-" + string(req.ID), Status: a2a.TaskStatus{State: a2a.TaskStateCanceled}}, nil
}

func (f *fakeAgent) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tasks[req.ID]
	if t == nil {
		return nil, a2a.ErrTaskNotFound
	}
	c := *t
	return &c, nil
}

func (f *fakeAgent) ListTasks(context.Context, *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	return nil, a2a.ErrUnsupportedOperation
}

func (f *fakeAgent) SubscribeToTask(context.Context, *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) { yield(nil, a2a.ErrUnsupportedOperation) }
}

func (f *fakeAgent) GetTaskPushConfig(context.Context, *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (f *fakeAgent) ListTaskPushConfigs(context.Context, *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (f *fakeAgent) CreateTaskPushConfig(context.Context, *a2a.PushConfig) (*a2a.PushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (f *fakeAgent) DeleteTaskPushConfig(context.Context, *a2a.DeleteTaskPushConfigRequest) error {
	return a2a.ErrPushNotificationNotSupported
}

func (f *fakeAgent) GetExtendedAgentCard(context.Context, *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	return nil, a2a.ErrExtendedCardNotConfigured
}

// harness is a gateway over fake agents, with a runtime, a linker that
// places messages as the real gateway does, and an audit that keeps what
// it is told.
type harness struct {
	t      testing.TB
	rt     *reach.Runtime
	g      *Gateway
	srv    *httptest.Server
	agents map[string]*fakeAgent
	audit  *memAudit
}

// whoKey carries the test's caller (the X-Who header) in a context.
type whoKey struct{}

type testIdentity struct{}

func (testIdentity) Caller(ctx context.Context) Owner {
	who, _ := ctx.Value(whoKey{}).(string)
	return Owner{Principal: who}
}

type memAudit struct {
	mu sync.Mutex
	ev []TaskEvent
}

func (m *memAudit) AuditTask(_ context.Context, e *TaskEvent) {
	m.mu.Lock()
	m.ev = append(m.ev, *e)
	m.mu.Unlock()
}

func (m *memAudit) kinds(task a2a.TaskID) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, e := range m.ev {
		if e.Task == string(task) {
			out = append(out, e.Kind+":"+e.State)
		}
	}
	return out
}

func (m *memAudit) find(kind string) []TaskEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []TaskEvent
	for _, e := range m.ev {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// testLinker places a message as the gateway's linker does: under the
// frame reach/parent or a traceparent names, in the request reach/request
// or baggage names, or in a new request of the caller's.
type testLinker struct{ rt *reach.Runtime }

func (l testLinker) Place(ctx context.Context, k *Link) (context.Context, func(), error) {
	who := testIdentity{}.Caller(ctx).Principal
	id := k.Request
	for _, b := range k.Header["Baggage"] {
		if _, v, ok := strings.Cut(b, "reach.request="); ok && id == "" {
			id = v
		}
	}
	span := k.Parent
	if tp := k.Header["Traceparent"]; span == "" && len(tp) > 0 {
		if parts := strings.Split(tp[0], "-"); len(parts) == 4 {
			span = parts[2]
		}
	}
	if span != "" {
		fid, err := reach.ParseFrameID(span)
		if err != nil {
			return nil, nil, fmt.Errorf("bad parent %q", span)
		}
		for _, r := range l.rt.Requests() {
			if f, ok := r.Frame(fid); ok {
				if r.Root().Principal() != who {
					return nil, nil, errors.New("not your request")
				}
				in := f.Request
				if s := f.SubRequest(); s != nil {
					in = s
				}
				return reach.WithParent(in.Context(), f), func() {}, nil
			}
		}
	}
	if id != "" {
		r, ok := l.rt.Lookup(id)
		if !ok {
			return nil, nil, fmt.Errorf("no request %s", id)
		}
		if r.Root().Principal() != who {
			return nil, nil, errors.New("not your request")
		}
		return r.Context(), func() {}, nil
	}
	ctx, r, err := l.rt.Begin(context.Background(), &reach.RequestOptions{Agent: k.Agent, Principal: who})
	if err != nil {
		return nil, nil, err
	}
	return ctx, r.End, nil
}

// newHarness serves agents (by name, each a fake) through a gateway; cfg
// adjusts each agent's configuration.
func newHarness(t testing.TB, cfg func(*Agent), names ...string) *harness {
	return newHarnessWith(t, nil, cfg, names...)
}

// newHarnessWith is newHarness with the gateway's options adjusted by opt.
func newHarnessWith(t testing.TB, opt func(*Options), cfg func(*Agent), names ...string) *harness {
	h := &harness{t: t, rt: reach.New(nil), agents: map[string]*fakeAgent{}, audit: &memAudit{}}
	var agents []Agent
	for _, n := range names {
		f := newFakeAgent(t, n, n != "poller")
		h.agents[n] = f
		a := Agent{Name: n, URL: f.srv.URL}
		if cfg != nil {
			cfg(&a)
		}
		agents = append(agents, a)
	}
	op := &Options{Agents: agents, Runtime: h.rt, Link: testLinker{h.rt}, Identity: testIdentity{},
		Audit: h.audit, CancelTimeout: 300 * time.Millisecond, Late: time.Second}
	if opt != nil {
		opt(op)
		if rt, ok := op.Runtime.(*reach.Runtime); ok {
			h.rt = rt // a test's own runtime (with its Link)
		}
	}
	g, err := New(t.Context(), op)
	if err != nil {
		t.Fatal(err)
	}
	h.g = g
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), whoKey{}, r.Header.Get("X-Who"))
		h.g.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(func() {
		h.srv.Close()
		h.g.Close()
	})
	return h
}

// client is an A2A client of agent name through the gateway, for caller
// who; v03 speaks A2A 0.3.
func (h *harness) client(name, who string, v03 bool) *a2aclient.Client {
	h.t.Helper()
	hc := &http.Client{Transport: whoTransport{who}}
	url := h.srv.URL + "/a2a/" + name
	opts := []a2aclient.FactoryOption{a2aclient.WithJSONRPCTransport(hc)}
	version := a2a.Version
	if v03 {
		opts = []a2aclient.FactoryOption{a2aclient.WithDefaultsDisabled(), a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc})}
		version = a2av0.Version
	}
	c, err := a2aclient.NewFromEndpoints(h.t.Context(), []*a2a.AgentInterface{{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: version}}, opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

type whoTransport struct{ who string }

func (w whoTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Who", w.who)
	r.Header.Set("Authorization", "Bearer secret-of-"+w.who)
	r.Header.Set("X-Reach-Key", "rk_secret-of-"+w.who)
	return http.DefaultTransport.RoundTrip(r)
}

// send sends text to agent name as who and waits for the answer.
func (h *harness) send(name, who, text string, meta map[string]any) *a2a.Task {
	h.t.Helper()
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	m.Metadata = meta
	return h.sendMsg(name, who, m, false)
}

func (h *harness) sendMsg(name, who string, m *a2a.Message, immediate bool) *a2a.Task {
	h.t.Helper()
	req := &a2a.SendMessageRequest{Message: m}
	if immediate {
		req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	}
	res, err := h.client(name, who, false).SendMessage(h.t.Context(), req)
	if err != nil {
		h.t.Fatalf("send %q to %s: %v", textOf(m.Parts), name, err)
	}
	tk, ok := res.(*a2a.Task)
	if !ok {
		h.t.Fatalf("send %q to %s: got %T, want a task", textOf(m.Parts), name, res)
	}
	return tk
}

// working waits until agent name's next task works, at the agent and at
// reach: the agent says so once it has sent its working state, which
// reach reads from the agent's stream on a goroutine of its own, maybe
// later than the test reads the task. (A task of the agent's that ended
// since, whose id the test never took, is not waited for: reach may have
// let it go.)
func (h *harness) working(name string) a2a.TaskID {
	h.t.Helper()
	f := h.agents[name]
	var id a2a.TaskID
	select {
	case id = <-f.working:
	case <-time.After(time.Minute): // as eventually: a loaded race build is slow
		h.t.Fatalf("agent %s never started working", name)
	}
	ended := func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		tk := f.tasks[id]
		return tk == nil || tk.Status.State.Terminal()
	}
	atReach := func() bool {
		h.g.tasks.mu.Lock()
		t := h.g.tasks.byID[taskKey{name, id}]
		h.g.tasks.mu.Unlock()
		if t == nil {
			return false
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		// Working, or on from there (the agent may go on at once).
		return t.state != a2a.TaskStateUnspecified && t.state != a2a.TaskStateSubmitted
	}
	for deadline := time.Now().Add(time.Minute); !atReach() && !ended(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			h.t.Fatalf("agent %s's task %s never worked at reach", name, id)
		}
	}
	return id
}

// eventually waits for cond, failing with what after a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// A minute at most (10 s, before, is less than a loaded race build can
	// take to reach what a test waits for).
	for deadline := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// state is the task's state at reach, as GetTask tells who.
func (h *harness) state(name, who string, id a2a.TaskID) a2a.TaskState {
	h.t.Helper()
	tk, err := h.client(name, who, false).GetTask(h.t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		h.t.Fatalf("GetTask %s: %v", id, err)
	}
	return tk.Status.State
}

func statusText(tk *a2a.Task) string { return textOfMessage(tk.Status.Message) }

// lonelyTask returns a task of agent "a" on a gateway made with o (its
// agents, runtime and link set here), which reaches no agent: for the
// tests that feed a task its events by hand.
func lonelyTask(t *testing.T, o Options) *task {
	t.Helper()
	rt := reach.New(nil)
	o.Agents, o.Runtime, o.Link = []Agent{{Name: "a", URL: "http://127.0.0.1:1"}}, rt, testLinker{rt}
	g, err := New(t.Context(), &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return newTask(g, g.agents["a"], Owner{})
}

// workingTask is lonelyTask's task as the agent's first event leaves it:
// task-1 of context ctx-1, working.
func workingTask(t *testing.T, o Options) *task {
	t.Helper()
	tk := lonelyTask(t, o)
	tk.id, tk.ctxID = "task-1", "ctx-1"
	tk.snap = &a2a.Task{ID: tk.id, ContextID: tk.ctxID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
	tk.state = a2a.TaskStateWorking
	return tk
}
