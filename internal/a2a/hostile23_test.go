package a2a

import (
	"context"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
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
