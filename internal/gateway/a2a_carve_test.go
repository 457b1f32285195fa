package gateway

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// spendAgent is an A2A agent (the SDK's server) that spends its hand-off's
// budget on reach's tools, passing reach/request on in each call's _meta:
// "spend N" makes N calls; "hold N" makes N and then works until it is
// canceled; "ring D N" makes N and hands "ring D-1 N" back to itself
// through reach, in its own sub-request, while D > 0.
type spendAgent struct {
	reach string
	tools []string     // reach instances to call tools on, in turn (reach alone if none)
	made  atomic.Int64 // tool calls reach ran (not refused)
	held  chan string  // the task ids of "hold" tasks, once their calls are made
	hreq  atomic.Value // the request of the last "hold" task
}

func (a *spendAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		f := strings.Fields(ec.Message.Parts[0].Text())
		req, _ := ec.Message.Metadata["reach/request"].(string)
		n, _ := strconv.Atoi(f[len(f)-1])
		a.spend(ctx, req, n)
		switch f[0] {
		case "hold":
			a.hreq.Store(req)
			a.held <- string(ec.TaskID)
			<-ctx.Done()
			return
		case "ring":
			if d, _ := strconv.Atoi(f[1]); d > 0 {
				a.send(ctx, fmt.Sprintf("ring %d %d", d-1, n), req, "")
			}
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("done"))), nil)
	}
}

func (a *spendAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

func (a *spendAgent) spend(ctx context.Context, req string, n int) {
	at := a.tools
	if len(at) == 0 {
		at = []string{a.reach}
	}
	var css []*mcp.ClientSession
	for _, base := range at {
		c := mcp.NewClient(&mcp.Implementation{Name: "spend-agent", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
		if err != nil {
			return
		}
		defer cs.Close()
		css = append(css, cs)
	}
	for i := range n {
		res, err := css[i%len(css)].CallTool(ctx, &mcp.CallToolParams{Name: "get_order", Arguments: map[string]any{"order_id": fmt.Sprint(1001 + i)},
			Meta: mcp.Meta{"reach/request": req}})
		if err == nil && !res.IsError {
			a.made.Add(1)
		}
	}
}

// send sends text to executor through reach, in request req, and waits
// for the task's end (or, with returnImmediately, its first state).
func (a *spendAgent) send(ctx context.Context, text, req, wait string) (*a2a.Task, error) {
	cl, err := a2aclient.NewFromEndpoints(ctx, []*a2a.AgentInterface{a2a.NewAgentInterface(a.reach+"/a2a/executor", a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(http.DefaultClient))
	if err != nil {
		return nil, err
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	m.Metadata = map[string]any{"reach/request": req}
	sr := &a2a.SendMessageRequest{Message: m}
	if wait == "immediately" {
		sr.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	}
	res, err := cl.SendMessage(ctx, sr)
	if err != nil {
		return nil, err
	}
	tk, ok := res.(*a2a.Task)
	if !ok {
		return nil, fmt.Errorf("got %T", res)
	}
	return tk, nil
}

// carveGateway serves the example tools and executor (run by ag,
// reentrant, its cycles allowed so that only budgets bound a ring), every
// request's budget 6 tool calls, a hand-off's 4 carved from it.
func carveGateway(t *testing.T, ag *spendAgent) *Gateway {
	t.Helper()
	up := executorUpstream(t, "spends", ag)
	cfg, err := config.Parse([]byte("examples: true\nbudgets:\n  default: {tool_calls: 6}\n  small: {tool_calls: 4}\n"+
		"agents:\n  - {name: executor, url: "+up.URL+", budget: small, reentrancy: reentrant, on_violation: allow}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	ag.reach = serveTest(t, g).URL
	return g
}

// A tree of hand-offs never spends past its root's budget (6 tool calls),
// however the hand-offs are made: a ring (executor hands work back to
// itself through reach, 4 levels of 2 calls, bounded by the first
// hand-off's 4), many hand-offs admitted at
// once (5 of 4 calls), or a hand-off canceled and sent again (its spend
// stays counted; the new one is carved from what is left).
func TestA2ACarvedBudgetsHoldTheRoot(t *testing.T) {
	root := func(g *Gateway, id string) int {
		r, ok := g.rt.Lookup(id)
		if !ok {
			t.Fatalf("no request %s", id)
		}
		return r.Usage().ToolCalls
	}
	t.Run("ring", func(t *testing.T) {
		ag := &spendAgent{}
		g := carveGateway(t, ag)
		if _, err := ag.send(t.Context(), "ring 3 2", "carve-ring", ""); err != nil {
			t.Fatal(err)
		}
		// Every hand-off back is below the first, whose 4 calls bound them all.
		if n := ag.made.Load(); n != 4 || root(g, "carve-ring") != 4 {
			t.Fatalf("the ring made %d tool calls, the root counts %d; want 4 (the first hand-off's carve)", n, root(g, "carve-ring"))
		}
	})
	t.Run("parallel", func(t *testing.T) {
		ag := &spendAgent{}
		g := carveGateway(t, ag)
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				if _, err := ag.send(t.Context(), "spend 4", "carve-parallel", ""); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := ag.made.Load(); n != 6 || root(g, "carve-parallel") != 6 {
			t.Fatalf("5 hand-offs at once made %d tool calls, the root counts %d; want 6 (its budget)", n, root(g, "carve-parallel"))
		}
	})
	t.Run("cancel-resend", func(t *testing.T) {
		ag := &spendAgent{held: make(chan string, 1)}
		g := carveGateway(t, ag)
		if _, err := ag.send(t.Context(), "hold 3", "carve-cancel", "immediately"); err != nil { // 3 of its carve of 4
			t.Fatal(err)
		}
		id := <-ag.held
		cl, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(ag.reach+"/a2a/executor", a2a.TransportProtocolJSONRPC)},
			a2aclient.WithJSONRPCTransport(http.DefaultClient))
		if err != nil {
			t.Fatal(err)
		}
		if tk, err := cl.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: a2a.TaskID(id)}); err != nil || tk.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("cancel: %v %v", tk, err)
		}
		// The canceled hand-off's request takes no more calls.
		ag.spend(t.Context(), ag.hreq.Load().(string), 1)
		if n := ag.made.Load(); n != 3 {
			t.Fatalf("a call in the canceled hand-off's request ran: %d calls made, want 3", n)
		}
		tk, err := ag.send(t.Context(), "spend 4", "carve-cancel", "")
		if err != nil {
			t.Fatal(err)
		}
		if n := ag.made.Load(); n != 6 || root(g, "carve-cancel") != 6 {
			t.Fatalf("a hand-off of 3 calls, canceled, and one of 4 sent again made %d tool calls, the root counts %d; want 6 (its budget); the second task %s",
				n, root(g, "carve-cancel"), tk.Status.State)
		}
	})
}

// spendInstances serves a spendAgent (executor, budget small: 4 tool calls)
// to two gateways, a and b, on one PostgreSQL store, in roots of 6 tool
// calls: the agent, the gateways' base URLs and the gateways.
func spendInstances(t *testing.T) (ag *spendAgent, bases []string, gs []*Gateway) {
	url := pgtest.Database(t)
	ag = &spendAgent{}
	up := executorUpstream(t, "spends", ag)
	for _, name := range []string{"a", "b"} {
		yaml := fmt.Sprintf("store: %s\ninstance: %s\ninstance_ttl: 2s\nexamples: true\nbudgets:\n  default: {tool_calls: 6}\n  small: {tool_calls: 4}\n"+
			"agents:\n  - {name: executor, url: %s, budget: small, reentrancy: reentrant}\n", url, name, up.URL)
		cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		g := newTestGateway(t, cfg)
		gs = append(gs, g)
		bases = append(bases, serveTest(t, g).URL)
	}
	return ag, bases, gs
}

// A hand-off's budget, carved on one instance, holds when its agent's
// tool calls alternate between two instances on one PostgreSQL store, and
// the root's holds across hand-offs made on each: two hand-offs of 4
// calls, one sent to each instance, in a root of 6 (without the
// instances' reading of the requests above a sub-request they join, 8
// ran). A stop of the root on one instance refuses its hand-off's calls
// on the other.
func TestInstancesCarvedBudgetAcross(t *testing.T) {
	ag, bases, gs := spendInstances(t)
	ag.tools = bases
	// A stop of the root on one instance refuses the calls of its
	// hand-off's part on the other.
	ag.held = make(chan string, 1)
	ag.reach = bases[0]
	if _, err := ag.send(t.Context(), "hold 1", "carve-stop", "immediately"); err != nil {
		t.Fatal(err)
	}
	<-ag.held
	if code, out := do(t, "POST", bases[0]+"/v1/requests/carve-stop/cancel", `{"mode":"cancel","reason":"enough"}`, nil); code != 200 {
		t.Fatalf("stop: %d %v", code, out)
	}
	before := ag.made.Load()
	var sub string
	for _, r := range gs[0].rt.Requests() {
		if r.Parent() != nil && r.Parent().ID() == "carve-stop" {
			sub = r.ID()
		}
	}
	ag.tools = bases[1:]
	ag.spend(t.Context(), sub, 1)
	if ag.made.Load() != before {
		t.Fatalf("a call of the stopped root's hand-off (%s) ran on the other instance", sub)
	}
	ag.tools = bases
	ag.made.Store(0)
	for i, base := range bases {
		ag.reach = base
		if _, err := ag.send(t.Context(), "spend 4", "carve-across", ""); err != nil {
			t.Fatal(err)
		}
		if n, want := ag.made.Load(), []int64{4, 6}[i]; n != want {
			t.Fatalf("after the hand-off on instance %d: %d tool calls made, want %d", i, n, want)
		}
	}
}
