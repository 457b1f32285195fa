package gateway

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
)

// A stop keeps what the agent streams before its own answer to the
// cancel. The executor (LATE=1) answers reach's CancelTask with an
// artifact "late part" and a status update "late status" on the task's
// stream, then its TASK_STATE_CANCELED: it sent them before it ended the
// task, and the A2A JS SDK's stream carries them first, as it would an
// event the agent sent before it had the cancel and that was in transit
// when the stop came. The planner, a JS SDK client, reads its stream,
// then (once those events are in the executor's own view of the task)
// resubscribes and gets the task: in A2A 1.0 and 0.3 each shows them,
// then the end reach gave (its text, not the agent's "canceled"), and the
// audit says they arrived after the stop, before the agent's end.
// Before, reach settled the task canceled at the stop and dropped them.
func TestA2AAgentsCancelAnswerKept(t *testing.T) {
	for _, stop := range []string{"budget", "cancel"} {
		for _, v := range []string{"1.0", "0.3"} {
			t.Run(stop+"/"+v, func(t *testing.T) { cancelAnswerKept(t, stop, v) })
		}
	}
}

func cancelAnswerKept(t *testing.T, stop, v string) {
	gate := filepath.Join(t.TempDir(), "gate")
	o := castOptions{roleEnv: map[string]map[string]string{"executor": {"LATE": "1"}, "planner": {"LATE_GATE": gate}}}
	if stop == "budget" {
		o.agent = map[string]string{"executor": "budget: small"}
		o.extra = "budgets:\n  small: {tokens: 400}\n" // 140 tokens a turn, its answer past its cap (scriptedModel)
	}
	c := startCast(t, o)
	text := "stream through"
	if v == "0.3" {
		text += " 0.3"
	}
	cl := c.inputClient(t, "planner")
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	m.Metadata = map[string]any{"reach/request": "late"}
	if _, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}}); err != nil {
		t.Fatal(err)
	}
	pl, ex := c.agents["planner"], c.agents["executor"]
	if stop == "cancel" {
		awaitAgents(t, "the planner's client to read the second artifact", func() bool {
			n := 0
			for _, e := range pl.all("stream") {
				if e["kind"] == "artifactUpdate" {
					n++
				}
			}
			return n >= 2
		})
		c.stopRequest(t, "late", "cancel")
	}
	awaitAgents(t, "the planner's stream to end", func() bool { return len(pl.all("stream-end")) == 1 })
	awaitAgents(t, "the executor's late events", func() bool { return len(ex.all("late")) == 1 })
	// The late events are in the executor's own view of the task: read
	// it there, directly.
	id, _ := ex.all("late")[0]["task"].(string)
	direct, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(ex.url, a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(&http.Client{}))
	if err != nil {
		t.Fatal(err)
	}
	awaitAgents(t, "the late artifact in the executor's view", func() bool {
		tk, err := direct.GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(id)})
		return err == nil && slices.ContainsFunc(tk.Artifacts, func(a *a2a.Artifact) bool { return a.ID == "late" })
	})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	awaitAgents(t, "the planner's reads", func() bool { return len(pl.all("get-history")) == 1 })

	var streamed []string
	for _, e := range pl.all("stream") {
		if e["kind"] == "artifactUpdate" {
			streamed = append(streamed, e["text"].(string))
		}
	}
	end := pl.all("stream-end")[0]
	if end["state"] != "TASK_STATE_CANCELED" || end["error"] != nil {
		t.Fatalf("the stream ended: %v", end)
	}
	evs := pl.all("stream")
	reason, _ := evs[len(evs)-1]["text"].(string)
	if !strings.Contains(reason, "reach canceled this task") {
		t.Fatalf("the stream's last event: %v", evs[len(evs)-1])
	}
	// The stream read the agent's events before its answer, then reach's
	// end: the late part is its last artifact, the late status comes
	// before the end.
	if len(streamed) == 0 || streamed[len(streamed)-1] != "late part" {
		t.Errorf("the stream's artifacts %q; want the agent's late part last", streamed)
	}
	lateAt := slices.IndexFunc(evs, func(e map[string]any) bool { return e["text"] == "late status" })
	if lateAt < 0 || lateAt == len(evs)-1 {
		t.Errorf("the stream's events %v; want the late status, then reach's end", evs)
	}
	// The subscription to the ended task and GetTask show the end reach
	// gave and the stream's artifacts.
	resub := pl.all("resub")
	if r := resub[len(resub)-1]; r["state"] != "TASK_STATE_CANCELED" || r["text"] != reason {
		t.Errorf("the subscription's last event: %v; want the stream's end", r)
	}
	for _, kind := range []string{"get", "get-history"} {
		g := pl.all(kind)[0]
		if g["state"] != "TASK_STATE_CANCELED" {
			t.Errorf("%s: %v; want canceled", kind, g)
		}
		if got := strs(g["parts"]); !slices.Equal(got, streamed) {
			t.Errorf("%s's artifacts %q; the stream's %q", kind, got, streamed)
		}
	}
	if g := pl.all("get")[0]; g["text"] != reason {
		t.Errorf("GetTask's status %q; want the stream's end %q", g["text"], reason)
	}
	// The audit says what the stop kept: events that arrived after it,
	// before the agent's own end. After reach's end, only canceled
	// events; the agent's own canceled, the same state, is not late.
	// A task's events reach the audit off the call path, after the
	// stream may have ended: wait for the stop's account.
	var tevs []*audit.Event
	awaitAgents(t, "the stop's account of task "+id+" in the audit", func() bool {
		tevs = c.taskEvents(t, "late", id)
		return slices.ContainsFunc(tevs, func(e *audit.Event) bool { return e.Reason == "kept" })
	})
	ended := false
	for _, e := range tevs {
		if ended && e.Decision != "canceled" || e.Reason == "late" {
			t.Errorf("an audit event of the task after its end: %s %s %s: %s", e.Name, e.Decision, e.Reason, e.Message)
		}
		if e.Reason == "kept" && (!strings.Contains(e.Message, "that arrived after it, up to the agent's own end") || strings.Contains(e.Message, " and 0 that arrived")) {
			t.Errorf("the stop's account %q; want the events that arrived after it counted", e.Message)
		}
		ended = ended || e.Decision == "canceled"
	}
}

func strs(v any) []string {
	l, _ := v.([]any)
	out := []string{}
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// taskEvents is the audit's task events of task id in the tree of
// request root, in order.
func (c *cast) taskEvents(t *testing.T, root, id string) []*audit.Event {
	t.Helper()
	c.g.audit.Flush(t.Context())
	var out []*audit.Event
	for queue := []string{root}; len(queue) > 0; queue = queue[1:] {
		evs, err := c.g.audit.Show(t.Context(), queue[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind == "task" && e.CallID == id {
				out = append(out, e)
			}
		}
		subs, err := c.g.store.ListRequests(t.Context(), store.RequestFilter{Parent: queue[0]})
		if err != nil {
			t.Fatal(err)
		}
		for _, sub := range subs {
			queue = append(queue, sub.ID)
		}
	}
	slices.SortFunc(out, func(a, b *audit.Event) int { return int(a.Seq - b.Seq) })
	return out
}
