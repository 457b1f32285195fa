package main

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// doneAgent is an A2A agent whose tasks work, stream an artifact, and
// complete.
type doneAgent struct{}

func (doneAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("the report")), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (doneAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// agentServer serves executor as an A2A agent on loopback and returns its
// URL.
func agentServer(t *testing.T, name string, executor a2asrv.AgentExecutor) string {
	mux := http.NewServeMux()
	up := httptest.NewServer(mux)
	t.Cleanup(up.Close)
	card := &a2a.AgentCard{Name: name, Description: name, Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(up.URL+"/", a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true}, DefaultInputModes: []string{"text"}, DefaultOutputModes: []string{"text"},
		Skills: []a2a.AgentSkill{{ID: "work", Name: "work", Description: "work", Tags: []string{"work"}}}}
	mux.Handle("GET "+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("POST /", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(executor)))
	return up.URL
}

// TestCrash18TaskStates kills a real `reach serve` at every time an A2A
// task's view is stored (task.stored#1, #2, ... until the task's drive
// ends without reaching it), for a task that completes with an artifact,
// one cancelled while it works, and one reach refused itself (its agent
// unreachable), and restarts it over the same data. After each restart
// (docs/STATE.md, task.stored): the task is found by its id; a task stored
// final before the kill keeps that state and its artifacts (a final view
// is never overwritten, the recovery's "cut off" neither); one stored
// running is shown final (failed), not working for ever; the common
// checks of checkAll hold.
func TestCrash18TaskStates(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	gone := "http://" + freeAddr(t) // nothing listens there
	cases := []struct {
		name, agent string
		final       a2a.TaskState // the task's state once its drive ran whole
		drive       func(t *testing.T, c *a2aclient.Client) error
	}{
		{name: "completed", agent: "done", final: a2a.TaskStateCompleted, drive: func(t *testing.T, c *a2aclient.Client) error {
			_, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("work"))})
			return err
		}},
		{name: "cancelled", agent: "slow", final: a2a.TaskStateCanceled, drive: func(t *testing.T, c *a2aclient.Client) error {
			res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("work")),
				Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
			if err != nil {
				return err
			}
			tk, ok := res.(*a2a.Task)
			if !ok {
				return fmt.Errorf("the send answered %T; want a task", res)
			}
			// Until it works at the agent: a cancel then reaches the agent.
			for !tk.Status.State.Terminal() && tk.Status.State != a2a.TaskStateWorking {
				time.Sleep(5 * time.Millisecond)
				if tk, err = c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: tk.ID}); err != nil {
					return err
				}
			}
			if _, err := c.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: tk.ID}); err != nil {
				return err
			}
			for !tk.Status.State.Terminal() { // until its end is stored (stores precede what a caller is shown)
				time.Sleep(5 * time.Millisecond)
				if tk, err = c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: tk.ID}); err != nil {
					return err
				}
			}
			return nil
		}},
		{name: "refused", agent: "gone", final: a2a.TaskStateFailed, drive: func(t *testing.T, c *a2aclient.Client) error {
			_, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("work"))})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k := 1; ; k++ {
				if !crashAtTaskStored(t, fmt.Sprint("task.stored#", k), tc.agent, tc.final, gone, tc.drive) {
					if k < 2 {
						t.Fatalf("no task view was stored")
					}
					return
				}
			}
		})
	}
}

// crashAtTaskStored runs one life armed at point, drives it, and if the
// point was reached kills it there, restarts the gateway and checks the
// task; it reports whether the point was reached.
func crashAtTaskStored(t *testing.T, point, agent string, final a2a.TaskState, gone string, drive func(*testing.T, *a2aclient.Client) error) bool {
	t.Helper()
	h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil)}
	cfg := travelConfig(t, sideEffectsUpstream(t, h.fx), "agents:\n"+
		"  - {name: done, url: '"+agentServer(t, "done", doneAgent{})+"'}\n"+
		"  - {name: slow, url: '"+agentServer(t, "slow", stuckAgent{})+"'}\n"+
		"  - {name: gone, url: '"+gone+"'}\n")
	addr := freeAddr(t)
	h.base = "http://" + addr
	client := func() *a2aclient.Client {
		c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(h.base+"/a2a/"+agent, a2a.TransportProtocolJSONRPC)},
			a2aclient.WithJSONRPCTransport(http.DefaultClient))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cmd, reached := startReachAt(t, cfg, addr, h.data, point)
	killAtEnd(t, cmd)
	driven := make(chan error, 1)
	go func() { driven <- drive(t, client()) }()
	select {
	case <-reached:
	case err := <-driven:
		// The drive saw its task final: every view of it was stored
		// before that, and none is stored after a final one.
		select {
		case <-reached:
		default:
			if err != nil {
				t.Errorf("the drive of a life armed at %s, never reached: %v", point, err)
			}
			stopServe(t, cmd, os.Interrupt)
			return false
		}
	case <-time.After(time.Minute):
		t.Fatalf("the gateway neither reached %s nor ended its drive in a minute", point)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	<-driven

	before := storedTasks(t, h.data, agent)
	if len(before) != 1 {
		t.Fatalf("stored tasks at the kill: %v; want the one", before)
	}
	pre := before[0]
	cmd = startReach(t, cfg, addr, h.data)
	killAtEnd(t, cmd)
	tk, err := client().GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(pre.ID)})
	if err != nil {
		t.Fatalf("%s: GetTask %s after the restart: %v", point, pre.ID, err)
	}
	var preView a2a.Task
	if err := json.Unmarshal(pre.Data, &preView); err != nil {
		t.Fatal(err)
	}
	switch {
	case pre.Final:
		if string(tk.Status.State) != pre.State || len(tk.Artifacts) != len(preView.Artifacts) {
			t.Errorf("%s: task %s stored %s with %d artifacts is shown %s with %d after the restart; want it as stored (final)",
				point, pre.ID, pre.State, len(preView.Artifacts), tk.Status.State, len(tk.Artifacts))
		}
		if pre.State != string(final) {
			t.Errorf("%s: task %s stored final as %s; want %s", point, pre.ID, pre.State, final)
		}
	case !tk.Status.State.Terminal():
		t.Errorf("%s: task %s stored %s is %s after the restart; want it final (its hand-off was interrupted)", point, pre.ID, pre.State, tk.Status.State)
	}
	if final == a2a.TaskStateCompleted && tk.Status.State == a2a.TaskStateCompleted {
		if len(tk.Artifacts) != 1 || !strings.Contains(fmt.Sprint(tk.Artifacts[0].Parts[0].Text()), "the report") {
			t.Errorf("%s: the completed task's artifacts after the restart: %+v; want the report", point, tk.Artifacts)
		}
	}
	t.Logf("killed at %s: the task stored %s (final %v), shown %s after the restart", point, pre.State, pre.Final, tk.Status.State)
	h.checkAll(t, cmd)
	after := storedTasks(t, h.data, agent)
	if len(after) != 1 || !after[0].Final || after[0].State != string(tk.Status.State) {
		t.Errorf("%s: the stored task after the restart: %+v; want it final, %s as shown", point, after, tk.Status.State)
	}
	return true
}

// storedTasks are agent's tasks in the store in data (no gateway running).
func storedTasks(t *testing.T, data, agent string) []*store.TaskRecord {
	t.Helper()
	st, err := sqlite.Open(t.Context(), data, &sqlite.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tasks, err := st.ListTasks(t.Context(), agent, "local", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}
