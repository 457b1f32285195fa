package gateway

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/pgtest"
)

// busyAgent is an A2A agent whose tasks work until they are cancelled.
type busyAgent struct{}

func (busyAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		<-ctx.Done()
	}
}

func (busyAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// The root request reach begins for an A2A client's message ends when
// its only hand-off is stopped (through the API), with the hand-off's
// cause, where it ran on until its idle gap (5 minutes here); a root that
// still has a running hand-off is not ended by the stop of another, and
// ends with the stop of its last. A root whose id the client named, and
// one whose hand-off the client canceled itself (CancelTask), are left to
// their idle gap: the client may go on in them.
func TestA2AClientRootEndsWithItsStoppedHandoff(t *testing.T) {
	g, base := a2aGateway(t, busyAgent{}, "idle_gap: 5m\n")
	cl := a2aClient(t, base)
	send := func(request string) {
		t.Helper()
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("work on "+fmt.Sprint(len(g.rt.Requests()))))
		if request != "" {
			m.Metadata = map[string]any{"reach/request": request}
		}
		if _, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}}); err != nil {
			t.Fatal(err)
		}
	}
	// handoffs returns the running hand-offs of root (any root if "").
	handoffs := func(root string) []*reach.Request {
		var out []*reach.Request
		for _, r := range g.rt.Requests() {
			if p := r.Parent(); p != nil && (root == "" || p.ID() == root) && r.State() == reach.RequestRunning {
				out = append(out, r)
			}
		}
		return out
	}
	stop := func(r *reach.Request) {
		t.Helper()
		if code, out := do(t, "POST", base+"/v1/requests/"+r.ID()+"/cancel", `{"mode":"cancel","reason":"not needed any more"}`, nil); code != 200 {
			t.Fatalf("cancel %s: %d %v", r.ID(), code, out)
		}
	}

	send("")
	awaitAgents(t, "the hand-off", func() bool { return len(handoffs("")) == 1 })
	sub := handoffs("")[0]
	root := sub.Parent()
	stop(sub)
	awaitAgents(t, "the root to end with its hand-off's stop", func() bool { return root.State() != reach.RequestRunning })
	if c := root.StopCause(); root.State() != "stopped_cancel" || c == nil || c.Reason != "not needed any more" || c.Request != sub.ID() {
		t.Fatalf("the root is %s, cause %+v; want stopped_cancel with its hand-off's cause", root.State(), c)
	}
	_, view := do(t, "GET", base+"/v1/requests/"+root.ID(), "", nil)
	if view["state"] != "stopped_cancel" || path(view, "stop", "reason") != "not needed any more" {
		t.Errorf("GET /v1/requests/%s: %v, stop %v", root.ID(), view["state"], view["stop"])
	}

	// Two hand-offs in one root (the second message names it): the stop
	// of one leaves the root running; the stop of the other ends it.
	send("")
	awaitAgents(t, "the first hand-off of a second root", func() bool { return len(handoffs("")) == 1 })
	two := handoffs("")[0].Parent()
	send(two.ID())
	awaitAgents(t, "its second hand-off", func() bool { return len(handoffs(two.ID())) == 2 })
	subs := handoffs(two.ID())
	// The first stop's clean-up (EndStoppedHandoff) is held until the
	// second hand-off has ended and its clean-up begun, which waits for the
	// first's to return: a late clean-up of the first must not end the
	// root with the first's cause.
	secondEnded, firstDone := make(chan struct{}), make(chan struct{})
	g.owned.SetHandoffEndHook(func(c reach.Cause) func() {
		wait := func(ch chan struct{}) {
			select {
			case <-ch:
			case <-t.Context().Done():
			}
		}
		switch c.Request {
		case subs[0].ID():
			wait(secondEnded)
			return func() { close(firstDone) }
		case subs[1].ID():
			close(secondEnded)
			wait(firstDone)
		}
		return func() {}
	})
	t.Cleanup(func() { g.owned.SetHandoffEndHook(nil) })
	stop(subs[0])
	// Ended, not only stopped: the last hand-off to end decides.
	awaitAgents(t, "the first hand-off to end", func() bool {
		return subs[0].State() == "stopped_cancel" && !subs[0].DelegateFrame().Ended().IsZero() && len(handoffs(two.ID())) == 1
	})
	if s := two.State(); s != reach.RequestRunning {
		t.Fatalf("two-tasks is %s after one of its two hand-offs stopped; want running", s)
	}
	stop(subs[1])
	awaitAgents(t, "two-tasks to end with its last hand-off", func() bool { return two.State() == "stopped_cancel" })
	// Its cause is the second stop's, the last hand-off to end: the
	// first's clean-up, run after it, did not end it.
	if c := two.StopCause(); c == nil || c.Request != subs[1].ID() {
		t.Errorf("two-tasks stopped by %+v; want the stop of its last hand-off, %s", c, subs[1].ID())
	}

	// A root the client named, whose only hand-off is stopped, is not
	// stopped (as one whose hand-off the client cancels, and which it then
	// uses again: TestA2ACarvedBudgetsHoldTheRoot/cancel-resend). On a
	// gateway that keeps one live task and one request a principal, a
	// message accepted after the stop shows the stopped task's end, and
	// what it did to the root, over.
	// The same, the second hand-off canceled by its client (CancelTask) and
	// the first's clean-up run after that: the last hand-off to end was not
	// stopped by a stop of its own, so the root runs on to its idle gap.
	send("")
	awaitAgents(t, "the first hand-off of a third root", func() bool { return len(handoffs("")) == 1 })
	first := handoffs("")[0]
	three := first.Parent()
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("work on more"))
	m.Metadata = map[string]any{"reach/request": three.ID()}
	res, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	tk, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("the second message in the third root: %T, want a task", res)
	}
	awaitAgents(t, "its second hand-off", func() bool { return len(handoffs(three.ID())) == 2 })
	var second *reach.Request
	for _, r := range handoffs(three.ID()) {
		if r != first {
			second = r
		}
	}
	release, firstDone := make(chan struct{}), make(chan struct{})
	g.owned.SetHandoffEndHook(func(c reach.Cause) func() {
		if c.Request != first.ID() {
			return func() {}
		}
		select {
		case <-release:
		case <-t.Context().Done():
		}
		return func() { close(firstDone) }
	})
	stop(first)
	awaitAgents(t, "the first hand-off to end", func() bool {
		return first.State() == "stopped_cancel" && !first.DelegateFrame().Ended().IsZero()
	})
	if got, err := cl.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: tk.ID}); err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask: %v %v", got, err)
	}
	awaitAgents(t, "the second hand-off to end", func() bool { return !second.DelegateFrame().Ended().IsZero() })
	close(release)
	<-firstDone
	if s, c := three.State(), three.StopCause(); s != reach.RequestRunning || c != nil {
		t.Errorf("the third root is %s, stopped by %+v, after its first hand-off's late clean-up; want running: its last hand-off was canceled by its client", s, c)
	}

	g.owned.SetHandoffEndHook(nil)
	g, base = a2aGateway(t, busyAgent{}, "idle_gap: 5m\nsessions_per_principal: 1\n")
	cl = a2aClient(t, base)
	sendUntilAccepted(t, cl, "named")
	awaitAgents(t, "the hand-off in named", func() bool { return len(handoffs("named")) == 1 })
	sub = handoffs("named")[0]
	stop(sub)
	probe := sendUntilAccepted(t, cl, "")
	if c := sub.Parent().StopCause(); c != nil {
		t.Errorf("named, a root its client named, was stopped by its hand-off's stop: %+v", c)
	}
	// A root reach began, whose hand-off its client cancels (CancelTask):
	// not stopped either.
	awaitAgents(t, "the probe's hand-off", func() bool { return len(handoffs("")) == 1 })
	sub = handoffs("")[0]
	if tk, err := cl.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: probe.ID}); err != nil || tk.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask: %v %v", tk, err)
	}
	sendUntilAccepted(t, cl, "")
	if c := sub.Parent().StopCause(); c != nil {
		t.Errorf("a root whose hand-off its client canceled was stopped: %+v", c)
	}
}

func a2aClient(t *testing.T, base string) *a2aclient.Client {
	t.Helper()
	cl, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(base+"/a2a/executor", a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(&http.Client{}))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// sendUntilAccepted sends a message (in request, if not "") until reach
// accepts it: a principal's live task, the one it may have, ended.
func sendUntilAccepted(t *testing.T, cl *a2aclient.Client, request string) *a2a.Task {
	t.Helper()
	var tk *a2a.Task
	awaitAgents(t, "reach to accept a message in "+request, func() bool {
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("work in "+request))
		if request != "" {
			m.Metadata = map[string]any{"reach/request": request}
		}
		res, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
		if err != nil {
			// The principal's live task has not ended yet: a protocol
			// error the client retries (too_many_requests, 429).
			if strings.Contains(err.Error(), "the most one principal may have") {
				return false
			}
			t.Fatal(err)
		}
		tk, _ = res.(*a2a.Task)
		return tk != nil && tk.Status.State != a2a.TaskStateRejected
	})
	return tk
}

// On a shared store (PostgreSQL, two instances): an A2A client's root on
// instance a ends with its only hand-off's stop, in the store too; a root
// that another instance also runs (a call on b named it) is not ended by
// it: b's part may still have work. Instance a keeps one live task and one
// request a principal, so that a message it accepts after a stop shows the
// stopped task's end, and what it does to the root, over.
func TestInstancesA2AClientRootEndsWithItsStoppedHandoff(t *testing.T) {
	url := pgtest.Database(t)
	up := executorUpstream(t, "works until cancelled", busyAgent{})
	var bases []string
	var gs []*Gateway
	for _, name := range []string{"a", "b"} {
		yaml := fmt.Sprintf("store: %s\ninstance: %s\ninstance_ttl: 2s\nidle_gap: 5m\nexamples: true\nagents:\n  - {name: executor, url: %s}\n", url, name, up.URL)
		if name == "a" {
			yaml += "sessions_per_principal: 1\n"
		}
		cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		g := newTestGateway(t, cfg)
		gs = append(gs, g)
		bases = append(bases, serveTest(t, g).URL)
	}
	cl := a2aClient(t, bases[0])
	send := func(request string) { sendUntilAccepted(t, cl, request) }
	// running returns a's running hand-off, once there is one.
	running := func() *reach.Request {
		t.Helper()
		var sub *reach.Request
		awaitAgents(t, "a hand-off on a", func() bool {
			for _, r := range gs[0].rt.Requests() {
				if r.Parent() != nil && r.State() == reach.RequestRunning {
					sub = r
				}
			}
			return sub != nil
		})
		return sub
	}
	stop := func(sub *reach.Request) {
		t.Helper()
		if code, out := do(t, "POST", bases[0]+"/v1/requests/"+sub.ID()+"/cancel", `{"mode":"cancel","reason":"not needed any more"}`, nil); code != 200 {
			t.Fatalf("cancel %s: %d %v", sub.ID(), code, out)
		}
	}

	send("")
	sub := running()
	root := sub.Parent()
	stop(sub)
	awaitAgents(t, "the root to end with its hand-off's stop", func() bool { return root.State() != reach.RequestRunning })
	if c := root.StopCause(); root.State() != "stopped_cancel" || c == nil || c.Request != sub.ID() {
		t.Fatalf("the root is %s, cause %+v; want stopped_cancel with its hand-off's cause", root.State(), c)
	}
	awaitAgents(t, "the store to hold the root stopped", func() bool {
		r, err := gs[0].store.GetRequest(t.Context(), root.ID())
		return err == nil && r.State == "stopped"
	})

	// A root that runs on b too (a call on b named it): not ended by its
	// hand-off's stop on a.
	send("")
	sub = running()
	root = sub.Parent()
	if r := callOn(t, bases[1], root.ID(), "c1", "search_kb", `{"query":"refund"}`); r["status"] != "success" {
		t.Fatalf("the call on b: %v", r)
	}
	stop(sub)
	send("probe") // accepted once the stopped task has ended at a
	if c := root.StopCause(); c != nil {
		t.Fatalf("%s, whose part on b runs, was stopped by its hand-off's stop on a: %+v", root.ID(), c)
	}
}
