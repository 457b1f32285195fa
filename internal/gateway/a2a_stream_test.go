package gateway

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// A stream refused midway, as the JS SDK's client reads it: the planner
// streams "stream" to the executor through reach (SendStreamingMessage);
// the executor asks the model before each of its artifacts, and its third
// turn spends its budget. The planner's stream ends, not broken and not
// hanging, with the task canceled and reach's text saying why and what to
// do; a subscription to the ended task and GetTask give the same end. In
// A2A 1.0 (SendStreamingMessage, SubscribeToTask, GetTask) and 0.3
// (message/stream, tasks/resubscribe, tasks/get, the SDK's compatibility
// transport).
func TestA2AAgentsStreamRefusedMidway(t *testing.T) {
	for _, v := range []string{"1.0", "0.3"} {
		t.Run(v, func(t *testing.T) {
			text := "stream through"
			if v == "0.3" {
				text += " 0.3" // message/stream, tasks/resubscribe, tasks/get
			}
			// 140 tokens a turn, its answer past its cap (scriptedModel).
			c := startCast(t, castOptions{agent: map[string]string{"executor": "budget: small"}, extra: "budgets:\n  small: {tokens: 400}\n"})
			tk := c.send(t, false, "planner", text, "")
			if tk.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("planner: %s %q", tk.Status.State, textOf(tk))
			}
			checkRefusedStream(t, c, "tokens budget", 2)
			if end := c.agents["planner"].all("stream-end"); end[0]["version"] != v {
				t.Errorf("the planner's client spoke A2A %v, want %s", end[0]["version"], v)
			}
		})
	}
}

// The same, the root request stopped through the API (cancel, and isolate,
// which lets the agents' streams go at once) while the executor streams: the planner's stream of its hand-off ends canceled, saying who
// stopped it and why, and the ended task can still be read.
func TestA2AAgentsStreamRootStopped(t *testing.T) {
	for _, mode := range []string{"cancel", "isolate"} {
		t.Run(mode, func(t *testing.T) { streamRootStopped(t, mode) })
	}
}

func streamRootStopped(t *testing.T, mode string) {
	c := startCast(t, castOptions{})
	cl, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(c.reach+"/a2a/planner", a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(&http.Client{}))
	if err != nil {
		t.Fatal(err)
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("stream through"))
	m.Metadata = map[string]any{"reach/request": "streaming"}
	if _, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}}); err != nil {
		t.Fatal(err)
	}
	pl := c.agents["planner"]
	awaitAgents(t, "the planner's client to read the second artifact", func() bool {
		n := 0
		for _, e := range pl.all("stream") {
			if e["kind"] == "artifactUpdate" {
				n++
			}
		}
		return n >= 2
	})
	c.stopRequest(t, "streaming", mode)
	checkRefusedStream(t, c, "by api: the user changed their mind", 2)
}

// checkRefusedStream checks what the planner's client read of its
// streamed hand-off to the executor, refused midway (reason in its text)
// after at least parts artifacts.
func checkRefusedStream(t *testing.T, c *cast, why string, parts int) {
	t.Helper()
	pl := c.agents["planner"]
	awaitAgents(t, "the planner's reads", func() bool { return len(pl.all("get")) == 1 })
	evs := pl.all("stream")
	if len(evs) == 0 {
		t.Fatal("the planner's client read no event of its stream")
	}
	// What the executor streamed before its third turn reached the caller,
	// in order.
	var read []string
	for _, e := range evs {
		if e["kind"] == "artifactUpdate" {
			read = append(read, e["text"].(string))
		}
	}
	for i := range parts {
		if len(read) <= i || read[i] != fmt.Sprintf("part %d", i+1) {
			t.Errorf("the planner read the artifacts %q; want parts 1 to %d first", read, parts)
			break
		}
	}
	// The stream's last event is the task's end, canceled, with reach's
	// text: nothing after it, no error, no hang.
	last := evs[len(evs)-1]
	reason, _ := last["text"].(string)
	if last["kind"] != "statusUpdate" || last["state"] != "TASK_STATE_CANCELED" ||
		!strings.Contains(reason, why) || !strings.Contains(reason, "report what was done so far") {
		t.Fatalf("the stream's last event: %v", last)
	}
	for _, e := range evs[:len(evs)-1] {
		if s, _ := e["state"].(string); s != "" && s != "TASK_STATE_SUBMITTED" && s != "TASK_STATE_WORKING" {
			t.Errorf("an end before the stream's last event: %v", e)
		}
	}
	end := pl.all("stream-end")
	if len(end) != 1 || end[0]["error"] != nil || end[0]["state"] != "TASK_STATE_CANCELED" {
		t.Fatalf("the stream ended: %v", end)
	}
	// A subscription to the ended task gives its end and closes; GetTask
	// gives the same end.
	resub, rend := pl.all("resub"), pl.all("resub-end")
	if len(rend) != 1 || rend[0]["error"] != nil || rend[0]["state"] != "TASK_STATE_CANCELED" || len(resub) == 0 {
		t.Fatalf("the subscription to the ended task: %v, ended %v", resub, rend)
	}
	if r := resub[len(resub)-1]; r["state"] != "TASK_STATE_CANCELED" || r["text"] != reason {
		t.Errorf("the subscription's last event: %v; want the stream's end", r)
	}
	if g := pl.all("get")[0]; g["state"] != "TASK_STATE_CANCELED" || g["text"] != reason {
		t.Errorf("GetTask: %v; want the stream's end", g)
	}
	// GetTask shows the artifacts the stream had
	// (TestA2AAgentsCancelAnswerKept).
	if got := strs(pl.all("get")[0]["parts"]); !slices.Equal(got, read) {
		t.Errorf("GetTask's artifacts %q; the stream's %q", got, read)
	}
	// The executor was told: CancelTask.
	ex := c.agents["executor"]
	awaitAgents(t, "the executor's CancelTask", func() bool { return len(ex.all("cancel")) == 1 })
}
