package gateway

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// A stream refused midway, as the JS SDK's client reads it: the planner
// streams "stream" to the executor through reach (SendStreamingMessage);
// the executor asks the model before each of its artifacts, and its third
// turn spends its budget. The planner's stream ends, not broken and not
// hanging, with the task canceled and reach's text saying why and what to
// do; a subscription to the ended task and GetTask give the same end.
func TestA2AAgentsStreamRefusedMidway(t *testing.T) {
	c := startCast(t, castOptions{agent: map[string]string{"executor": "budget: small"}, extra: "budgets:\n  small: {tokens: 140}\n"})
	tk := c.send(t, false, "planner", "stream through", "")
	if tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("planner: %s %q", tk.Status.State, textOf(tk))
	}
	pl := c.agents["planner"]
	awaitAgents(t, "the planner's reads", func() bool { return len(pl.all("get")) == 1 })
	evs := pl.all("stream")
	if len(evs) == 0 {
		t.Fatal("the planner's client read no event of its stream")
	}
	// What the executor streamed before its third turn reached the caller,
	// in order.
	var parts []string
	for _, e := range evs {
		if e["kind"] == "artifactUpdate" {
			parts = append(parts, e["text"].(string))
		}
	}
	if len(parts) < 2 || parts[0] != "part 1" || parts[1] != "part 2" {
		t.Errorf("the planner read the artifacts %q; want part 1 and part 2 first", parts)
	}
	// The stream's last event is the task's end, canceled, with reach's
	// text: nothing after it, no error, no hang.
	last := evs[len(evs)-1]
	reason, _ := last["text"].(string)
	if last["kind"] != "statusUpdate" || last["state"] != "TASK_STATE_CANCELED" ||
		!strings.Contains(reason, "tokens budget") || !strings.Contains(reason, "report what was done so far") {
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
	// The executor was told: CancelTask.
	ex := c.agents["executor"]
	awaitAgents(t, "the executor's CancelTask", func() bool { return len(ex.all("cancel")) == 1 })
}
