package a2a

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// Two gateways (two instances) keep their tasks in one store: the second
// answers GetTask, ListTasks and CancelTask for a task the first runs; the
// cancel reaches the first through the task's request, and the stored
// state is canceled, for good.
func TestTasksAcrossInstances(t *testing.T) {
	st := store.NewMemory()
	a := newHarness(t, nil, "planner")
	a.g.opts.Tasks = st
	// b: another gateway in front of the same agent, on the same store; its
	// Stop reaches a's request as the cluster's stop would.
	b := &harness{t: t, rt: reach.New(nil), agents: a.agents, audit: &memAudit{}}
	g, err := New(t.Context(), &Options{Agents: []Agent{{Name: "planner", URL: a.agents["planner"].srv.URL}}, Runtime: b.rt,
		Link: testLinker{b.rt}, Identity: testIdentity{}, CancelTimeout: 5 * time.Second, Tasks: st,
		Stop: func(_ context.Context, request, reason string) error {
			r, ok := a.rt.Lookup(request)
			if !ok {
				return fmt.Errorf("no request %s", request)
			}
			r.Stop(reach.Cancel, "a2a", reason)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	b.g = g
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.g.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), whoKey{}, r.Header.Get("X-Who"))))
	}))
	t.Cleanup(func() { b.srv.Close(); b.g.Close() })

	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow"))
	tk := a.sendMsg("planner", "alice", m, true)
	a.working("planner")
	eventually(t, "the task stored working", func() bool {
		rec, err := st.GetTask(t.Context(), "planner", string(tk.ID))
		return err == nil && rec.State == string(a2a.TaskStateWorking)
	})
	if s := b.state("planner", "alice", tk.ID); s != a2a.TaskStateWorking {
		t.Fatalf("b's GetTask of a's task: %s", s)
	}
	if _, err := b.client("planner", "bob", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: tk.ID}); err == nil {
		t.Fatal("bob got alice's task through b")
	}
	list, err := b.client("planner", "alice", false).ListTasks(t.Context(), &a2a.ListTasksRequest{})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != tk.ID {
		t.Fatalf("b's ListTasks: %v, %v", list, err)
	}
	res, err := b.client("planner", "alice", false).CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: tk.ID})
	if err != nil || res.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask through b: %v, %v", res, err)
	}
	if s := a.state("planner", "alice", tk.ID); s != a2a.TaskStateCanceled {
		t.Fatalf("the task at a after the cancel through b: %s", s)
	}
	eventually(t, "the agent to see CancelTask", func() bool { return len(a.agents["planner"].canceled()) == 1 })
	if rec, _ := st.GetTask(t.Context(), "planner", string(tk.ID)); !rec.Final || rec.State != string(a2a.TaskStateCanceled) {
		t.Fatalf("the stored task: %+v", rec)
	}
}
