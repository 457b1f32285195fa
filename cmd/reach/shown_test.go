package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// TestCrashAtTaskShown kills a real `reach serve` right after it handed a
// caller an A2A task's id (task.shown, docs/STATE.md): a streaming send's
// first event, or the answer of a send that returns at once, passed to
// the HTTP writer (the caller may have had it before the kill, or not).
// After the restart the task is known by that id, failed (its hand-off
// was cut off) with a text that says so, never "no such task": the
// gateway stores a task's first view before any caller can read it.
func TestCrashAtTaskShown(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	for _, immediate := range []bool{false, true} {
		t.Run(map[bool]string{false: "stream", true: "immediate"}[immediate], func(t *testing.T) {
			crashAtTaskShown(t, "", immediate)
		})
	}
}

// TestCrashAtTaskShownOnPostgres is TestCrashAtTaskShown over PostgreSQL,
// the task cut off by the recovery of the killed instance's work.
func TestCrashAtTaskShownOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	pg := pgtest.Own(t)
	for n, immediate := range []bool{false, true} {
		t.Run(map[bool]string{false: "stream", true: "immediate"}[immediate], func(t *testing.T) {
			url, err := pg.CreateDatabase(t.Context(), fmt.Sprint("shown", n))
			if err != nil {
				t.Fatal(err)
			}
			crashAtTaskShown(t, url, immediate)
		})
	}
}

// crashAtTaskShown is one case of TestCrashAtTaskShown, over the
// PostgreSQL database url, or SQLite if "".
func crashAtTaskShown(t *testing.T, url string, immediate bool) {
	h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil), store: url}
	head := ""
	if url != "" {
		head = "store: " + url + "\ninstance: a\ninstance_ttl: 1s\n"
	}
	cfg := writeConfig(t, head+travelYAML(sideEffectsUpstream(t, h.fx), "agents:\n  - {name: slow, url: '"+stuckAgentServer(t)+"'}\n"))
	addr := freeAddr(t)
	h.base = "http://" + addr
	client := func() *a2aclient.Client {
		c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(h.base+"/a2a/slow", a2a.TransportProtocolJSONRPC)},
			a2aclient.WithJSONRPCTransport(http.DefaultClient))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	shown := make(chan a2a.TaskID, 1)
	h.kill(t, cfg, addr, "task.shown", func(t *testing.T, h *crashRun) {
		req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("work"))}
		if immediate {
			req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
			if res, err := client().SendMessage(context.Background(), req); err == nil {
				if tk, ok := res.(*a2a.Task); ok {
					shown <- tk.ID
				}
			}
			return
		}
		for ev, err := range client().SendStreamingMessage(context.Background(), req) {
			if err != nil {
				return
			}
			if tk, ok := ev.(*a2a.Task); ok {
				shown <- tk.ID
				return
			}
		}
	})
	cmd := startReach(t, cfg, addr, h.data)
	killAtEnd(t, cmd)
	var st store.Tasks
	if url != "" {
		h.recovered(t)
		p, err := postgres.Open(t.Context(), url, &postgres.Options{NoMigrate: true})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		st = p
	} else {
		s, err := sqlite.Open(t.Context(), h.data, &sqlite.Options{NoCreate: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		st = s
	}
	// The id the caller got, if the kill let it through; the gateway had
	// handed it out either way, and the store must know it.
	tasks, err := st.ListTasks(t.Context(), "slow", "local", "", 10)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("stored tasks after the restart: %v (%v); want the one whose id the gateway had handed out", tasks, err)
	}
	id := a2a.TaskID(tasks[0].ID)
	select {
	case got := <-shown:
		if got != id {
			t.Fatalf("the caller got task %s; the store holds %s", got, id)
		}
	default:
	}
	tk, err := client().GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		t.Fatalf("GetTask %s, an id the gateway handed out before the kill: %v; want the task", id, err)
	}
	if tk.Status.State != a2a.TaskStateFailed || !strings.Contains(textOfStatus(tk), "reach stopped following this task") {
		t.Errorf("task %s after the restart: %s %q; want it failed, cut off, with a text that says so", id, tk.Status.State, textOfStatus(tk))
	}
	if rec, err := st.GetTask(t.Context(), "slow", string(id)); err != nil || !rec.Final || rec.State != string(a2a.TaskStateFailed) {
		t.Errorf("the stored task: %+v (%v); want it stored failed, final", rec, err)
	}
	h.checkAll(t, cmd)
}

// textOfStatus is the text of a task's status message.
func textOfStatus(tk *a2a.Task) string {
	if tk.Status.Message == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range tk.Status.Message.Parts {
		if s, ok := p.Content.(a2a.Text); ok {
			b.WriteString(string(s))
		}
	}
	return b.String()
}

// TestRefusedTaskAfterRestart: a task reach refuses itself, before any
// hand-off (an agent it cannot reach, a bound: the principal's running
// tasks), is stored in its final state before the caller gets its id. After
// a kill -9 and a restart, GetTask and ListTasks find it as the caller was
// told it, with the refusal's text, never "no such task".
func TestRefusedTaskAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	refusedAfterRestart(t, "")
}

// TestRefusedTaskAfterRestartOnPostgres is TestRefusedTaskAfterRestart
// over PostgreSQL.
func TestRefusedTaskAfterRestartOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	url, err := pgtest.Own(t).CreateDatabase(t.Context(), "refused")
	if err != nil {
		t.Fatal(err)
	}
	refusedAfterRestart(t, url)
}

// refusedAfterRestart is TestRefusedTaskAfterRestart over the PostgreSQL
// database url, or SQLite if "".
func refusedAfterRestart(t *testing.T, url string) {
	h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil), store: url}
	head := "sessions_per_principal: 1\n"
	if url != "" {
		head += "store: " + url + "\ninstance: a\ninstance_ttl: 1s\n"
	}
	gone := "http://" + freeAddr(t) // nothing listens there
	cfg := writeConfig(t, head+travelYAML(sideEffectsUpstream(t, h.fx),
		"agents:\n  - {name: slow, url: '"+stuckAgentServer(t)+"'}\n  - {name: gone, url: '"+gone+"'}\n"))
	addr := freeAddr(t)
	h.base = "http://" + addr
	client := func(agent string) *a2aclient.Client {
		c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(h.base+"/a2a/"+agent, a2a.TransportProtocolJSONRPC)},
			a2aclient.WithJSONRPCTransport(http.DefaultClient))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	send := func(agent string, immediate bool) *a2a.Task {
		t.Helper()
		req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("work"))}
		if immediate {
			req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
		}
		res, err := client(agent).SendMessage(t.Context(), req)
		if err != nil {
			t.Fatalf("send to %s: %v", agent, err)
		}
		tk, ok := res.(*a2a.Task)
		if !ok {
			t.Fatalf("send to %s answered %T; want a task", agent, res)
		}
		return tk
	}
	var refused []*a2a.Task
	h.kill(t, cfg, addr, "", func(t *testing.T, h *crashRun) {
		unreachable := send("gone", false)
		if unreachable.Status.State != a2a.TaskStateFailed || !strings.Contains(textOfStatus(unreachable), "could not hand this message to agent gone") {
			t.Fatalf("the send to an agent reach cannot reach: %s %q", unreachable.Status.State, textOfStatus(unreachable))
		}
		send("slow", true) // the one task the principal may have running
		bounded := send("slow", false)
		if bounded.Status.State != a2a.TaskStateRejected || !strings.Contains(textOfStatus(bounded), "tasks running at reach") {
			t.Fatalf("a send past sessions_per_principal: %s %q", bounded.Status.State, textOfStatus(bounded))
		}
		refused = []*a2a.Task{unreachable, bounded}
	})
	cmd := startReach(t, cfg, addr, h.data)
	killAtEnd(t, cmd)
	if url != "" {
		h.recovered(t)
	}
	for i, agent := range []string{"gone", "slow"} {
		want := refused[i]
		got, err := client(agent).GetTask(t.Context(), &a2a.GetTaskRequest{ID: want.ID})
		if err != nil {
			t.Errorf("GetTask %s after the restart, a task reach refused and handed out: %v; want it", want.ID, err)
			continue
		}
		if got.Status.State != want.Status.State || textOfStatus(got) != textOfStatus(want) {
			t.Errorf("task %s after the restart: %s %q; want %s %q", want.ID, got.Status.State, textOfStatus(got), want.Status.State, textOfStatus(want))
		}
		list, err := client(agent).ListTasks(t.Context(), &a2a.ListTasksRequest{})
		if err != nil {
			t.Fatalf("ListTasks of %s: %v", agent, err)
		}
		found := false
		for _, x := range list.Tasks {
			found = found || (x.ID == want.ID && x.Status.State == want.Status.State)
		}
		if !found {
			t.Errorf("ListTasks of %s after the restart: %d tasks, without the refused %s", agent, len(list.Tasks), want.ID)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}
