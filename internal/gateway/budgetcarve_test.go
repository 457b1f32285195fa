package gateway

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/pgtest"
)

// namingAgent is an A2A agent that, in its hand-off, names a budget that
// lifts every limit (budget, which every principal may name) on each call
// it makes in the hand-off's sub-request: "tools N" makes N tool calls
// (_meta reach/request and reach/budget), "parent N" N tool calls under
// the delegate frame (_meta reach/parent and reach/budget), "model N" N
// model turns (the Reach-Request and Reach-Budget headers), and "ring D N"
// N tool calls and then a message back to itself through reach (metadata
// reach/request and reach/budget) while D > 0.
type namingAgent struct {
	reach  string
	tools  []string // reach instances to call tools on, in turn (reach alone if none)
	budget string
	made   atomic.Int64 // tool calls reach ran
	turns  atomic.Int64 // model turns reach let through
	last   atomic.Value // the sub-request of the last hand-off
}

func (a *namingAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		f := strings.Fields(ec.Message.Parts[0].Text())
		req, _ := ec.Message.Metadata[link.MetaRequest].(string)
		parent, _ := ec.Message.Metadata[link.MetaParent].(string)
		if _, named := ec.Message.Metadata[link.MetaBudget]; named {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("reach forwarded reach/budget"))), nil)
			return
		}
		a.last.Store(req)
		n, _ := strconv.Atoi(f[len(f)-1])
		switch f[0] {
		case "tools", "ring":
			a.call(ctx, mcp.Meta{link.MetaRequest: req, link.MetaBudget: a.budget}, n)
		case "parent":
			a.call(ctx, mcp.Meta{link.MetaParent: parent, link.MetaBudget: a.budget}, n)
		case "model":
			for range n {
				hr, _ := http.NewRequestWithContext(ctx, "POST", a.reach+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
				hr.Header.Set(link.HeaderRequest, req)
				hr.Header.Set(link.HeaderBudget, a.budget)
				if resp, err := http.DefaultClient.Do(hr); err == nil {
					if resp.StatusCode == http.StatusOK {
						a.turns.Add(1)
					}
					resp.Body.Close()
				}
			}
		}
		if d, _ := strconv.Atoi(f[1]); f[0] == "ring" && d > 0 {
			a.send(ctx, fmt.Sprintf("ring %d %d", d-1, n), map[string]any{link.MetaRequest: req, link.MetaBudget: a.budget})
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("done"))), nil)
	}
}

func (a *namingAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// call makes n tool calls with meta, on each of a.tools in turn.
func (a *namingAgent) call(ctx context.Context, meta mcp.Meta, n int) {
	at := a.tools
	if len(at) == 0 {
		at = []string{a.reach}
	}
	var css []*mcp.ClientSession
	for _, base := range at {
		c := mcp.NewClient(&mcp.Implementation{Name: "naming-agent", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
		if err != nil {
			return
		}
		defer cs.Close()
		css = append(css, cs)
	}
	for i := range n {
		res, err := css[i%len(css)].CallTool(ctx, &mcp.CallToolParams{Name: "get_order", Arguments: map[string]any{"order_id": fmt.Sprint(1001 + i)}, Meta: meta})
		if err == nil && !res.IsError {
			a.made.Add(1)
		}
	}
}

// send sends text to executor through reach with metadata md, and waits
// for the task's end.
func (a *namingAgent) send(ctx context.Context, text string, md map[string]any) (*a2a.Task, error) {
	cl, err := a2aclient.NewFromEndpoints(ctx, []*a2a.AgentInterface{a2a.NewAgentInterface(a.reach+"/a2a/executor", a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(http.DefaultClient))
	if err != nil {
		return nil, err
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	m.Metadata = md
	res, err := cl.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
	if err != nil {
		return nil, err
	}
	tk, ok := res.(*a2a.Task)
	if !ok {
		return nil, fmt.Errorf("got %T", res)
	}
	return tk, nil
}

// namingBudgets: roots of 6 tool calls and 200 tokens, a hand-off to
// executor 4 and 100 of them (small), and bulk, which lifts every limit and
// which every principal may name.
const namingBudgets = "budgets:\n  default: {tool_calls: 6, tokens: 200}\n  small: {tool_calls: 4, tokens: 100}\n" +
	"  bulk: {turns: 0, depth: 0, tool_calls: 0, tokens: 0, wall: 0s, principals: [\"*\"]}\n"

// namingGateway serves the example tools, a model that charges 50 tokens a
// turn and executor (run by ag, reentrant, its cycles allowed so that only
// budgets bound a ring) with namingBudgets; store, if not empty, is the
// store and instance name's YAML.
func namingGateway(t *testing.T, ag *namingAgent, up *httptest.Server, model *scriptedModel, store string) (*Gateway, string) {
	t.Helper()
	ms := httptest.NewServer(model)
	t.Cleanup(ms.Close)
	cfg, err := config.Parse([]byte(store+"examples: true\nmodel: {base_url: '"+ms.URL+"/v1', api_key: sk-test, name: scripted}\n"+namingBudgets+
		"agents:\n  - {name: executor, url: "+up.URL+", budget: small, reentrancy: reentrant, on_violation: allow}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	return g, serveTest(t, g).URL
}

// namingInstances serves two naming gateways, a and b, on one PostgreSQL
// database, in front of one executor run by ag (as twoInstances does for
// the probe upstream), and returns their URLs.
func namingInstances(t *testing.T, ag *namingAgent) []string {
	t.Helper()
	url := pgtest.Database(t)
	up := executorUpstream(t, "names bulk", ag)
	var bases []string
	for _, name := range []string{"a", "b"} {
		_, base := namingGateway(t, ag, up, &scriptedModel{}, fmt.Sprintf("store: %s\ninstance: %s\ninstance_ttl: 2s\n", url, name))
		bases = append(bases, base)
	}
	return bases
}

// TestSubAgentNamingALargerBudgetStaysCarved: a sub-agent that names a
// budget lifting every limit (one it may name) on the calls of its
// hand-off, over MCP (_meta, by request or by the delegate frame), on the
// model route (Reach-Budget) and over A2A (a message's metadata), still
// spends within its carve (4 tool calls, 100 tokens) and its root's budget
// (6, 200) across hand-offs: a budget is a new request's, never one a call
// joins. Reach does not forward reach/budget to the agent.
func TestSubAgentNamingALargerBudgetStaysCarved(t *testing.T) {
	usage := func(g *Gateway, id string) (int, int64) {
		r, ok := g.rt.Lookup(id)
		if !ok {
			t.Fatalf("no request %s", id)
		}
		return r.Usage().ToolCalls, r.Usage().Tokens
	}
	setup := func(t *testing.T) (*namingAgent, *Gateway, *scriptedModel) {
		ag := &namingAgent{budget: "bulk"}
		model := &scriptedModel{}
		g, base := namingGateway(t, ag, executorUpstream(t, "names bulk", ag), model, "")
		ag.reach = base
		return ag, g, model
	}
	for _, how := range []string{"tools", "parent"} {
		t.Run(how, func(t *testing.T) {
			ag, g, _ := setup(t)
			for i, want := range []int64{4, 6} { // the carve, then the root's budget
				// 9 calls: 2 let through and 7 refused in the second
				// hand-off; an 8th refusal in a row would stop it
				// (RefusedInARow).
				if tk, err := ag.send(t.Context(), how+" 9", map[string]any{link.MetaRequest: "naming-" + how}); err != nil || tk.Status.State != a2a.TaskStateCompleted {
					t.Fatalf("hand-off %d: %v %v", i, tk, err)
				}
				if n, _ := usage(g, "naming-"+how); ag.made.Load() != want || n != int(want) {
					t.Fatalf("after hand-off %d naming bulk: %d tool calls made, the root counts %d; want %d", i, ag.made.Load(), n, want)
				}
			}
		})
	}
	t.Run("model", func(t *testing.T) {
		ag, g, model := setup(t)
		for i, want := range []int64{2, 4} { // 100 tokens of 50 a turn, then the root's 200
			if tk, err := ag.send(t.Context(), "model 5", map[string]any{link.MetaRequest: "naming-model"}); err != nil || tk.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("hand-off %d: %v %v", i, tk, err)
			}
			if _, tokens := usage(g, "naming-model"); ag.turns.Load() != want || model.calls.Load() != want || tokens != 50*want {
				t.Fatalf("after hand-off %d naming bulk: %d turns through, the model asked %d times, the root counts %d tokens; want %d turns, %d tokens",
					i, ag.turns.Load(), model.calls.Load(), tokens, want, 50*want)
			}
		}
	})
	t.Run("after", func(t *testing.T) {
		// Its hand-off over, the sub-agent goes on in its sub-request, by
		// its id, naming bulk or nothing: refused, nothing run, no request
		// begun with that id (before, a root of that id was begun, bulk's
		// or the default's, outside the root's budget and stops).
		ag, g, _ := setup(t)
		if tk, err := ag.send(t.Context(), "tools 1", map[string]any{link.MetaRequest: "naming-after"}); err != nil || tk.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("hand-off: %v %v", tk, err)
		}
		sub := ag.last.Load().(string)
		for _, budget := range []string{"bulk", ""} {
			ag.budget = budget
			ag.call(t.Context(), mcp.Meta{link.MetaRequest: sub, link.MetaBudget: budget}, 3)
			if r, ok := g.rt.Lookup(sub); ag.made.Load() != 1 || !ok || r.Parent() == nil {
				t.Fatalf("calls in the ended hand-off %s naming %q: %d tool calls made, want 1 (the hand-off's); begun again as a root: %v", sub, budget, ag.made.Load(), ok && r.Parent() == nil)
			}
		}
		cs, err := mcpAs(t, ag.reach, "")
		if err != nil {
			t.Fatal(err)
		}
		// Refused as a call in an ended request is (request_ended, the
		// model's to read): a tool result with isError.
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_order", Arguments: map[string]any{"order_id": "1001"}, Meta: mcp.Meta{link.MetaRequest: sub}})
		said := fmt.Sprint(err)
		if res != nil && len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				said = tc.Text
			}
		}
		if err != nil || !res.IsError || !strings.Contains(said, "hand-off of request naming-after") || !strings.Contains(said, "Work in request naming-after") {
			t.Errorf("a call in the ended hand-off: %q (error %v), want a tool result with isError naming its root and what to do", said, err)
		}
	})
	t.Run("a2a", func(t *testing.T) {
		ag, g, _ := setup(t)
		if tk, err := ag.send(t.Context(), "ring 3 2", map[string]any{link.MetaRequest: "naming-ring"}); err != nil || tk.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("ring: %v %v", tk, err)
		}
		if n, _ := usage(g, "naming-ring"); ag.made.Load() != 4 || n != 4 {
			t.Fatalf("a ring whose every hand-off names bulk made %d tool calls, the root counts %d; want 4 (the first hand-off's carve)", ag.made.Load(), n)
		}
	})
}

// TestInstancesSubAgentNamingALargerBudgetStaysCarved: on two instances
// sharing one PostgreSQL store, a sub-agent whose tool calls alternate
// between them and each name bulk spends its carve (4) and no more, and a
// second hand-off, sent to the other instance, what its root has left (2).
func TestInstancesSubAgentNamingALargerBudgetStaysCarved(t *testing.T) {
	ag := &namingAgent{budget: "bulk"}
	bases := namingInstances(t, ag)
	ag.tools = bases
	for i, want := range []int64{4, 6} {
		ag.reach = bases[i]
		// 9 calls: under 8 refusals in a row (RefusedInARow).
		if tk, err := ag.send(t.Context(), "tools 9", map[string]any{link.MetaRequest: "naming-across"}); err != nil || tk.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("hand-off %d: %v %v", i, tk, err)
		}
		if n := ag.made.Load(); n != want {
			t.Fatalf("after the hand-off on instance %d, every call naming bulk: %d tool calls made, want %d", i, n, want)
		}
	}
	// The second hand-off over, its sub-agent goes on in it on each
	// instance, naming bulk: nothing runs.
	for _, base := range bases {
		ag.tools = []string{base}
		ag.call(t.Context(), mcp.Meta{link.MetaRequest: ag.last.Load().(string), link.MetaBudget: "bulk"}, 2)
		if n := ag.made.Load(); n != 6 {
			t.Fatalf("calls in the ended hand-off %s on %s naming bulk: %d tool calls made, want 6", ag.last.Load(), base, n)
		}
	}
}

// TestA2AMessageNamesBudget: an A2A message names the budget of the request
// reach begins for it in its metadata (the message's, or its request's) as
// a name or amounts, or by a Reach-Budget header; the metadata wins; a
// value that is neither is a protocol error saying what to send, no task,
// nothing handed off.
func TestA2AMessageNamesBudget(t *testing.T) {
	ag := &namingAgent{}
	g, base := namingGateway(t, ag, executorUpstream(t, "names", ag), &scriptedModel{}, "")
	ag.reach = base
	trySend := func(id string, msg, req map[string]any, header string) (*a2a.Task, error) {
		t.Helper()
		hc := http.DefaultClient
		if header != "" {
			hc = &http.Client{Transport: withHeader{link.HeaderBudget, header, http.DefaultTransport}}
		}
		cl, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(base+"/a2a/executor", a2a.TransportProtocolJSONRPC)},
			a2aclient.WithJSONRPCTransport(hc))
		if err != nil {
			t.Fatal(err)
		}
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("tools 0"))
		m.Metadata = map[string]any{link.MetaRequest: id}
		for k, v := range msg {
			m.Metadata[k] = v
		}
		res, err := cl.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m, Metadata: req})
		if err != nil {
			return nil, err
		}
		tk, ok := res.(*a2a.Task)
		if !ok {
			t.Fatalf("%s: got %T", id, res)
		}
		return tk, nil
	}
	send := func(id string, msg, req map[string]any, header string) *a2a.Task {
		t.Helper()
		tk, err := trySend(id, msg, req, header)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	for _, tc := range []struct {
		id        string
		msg, req  map[string]any
		header    string
		toolCalls int
	}{
		{"mb-name", map[string]any{link.MetaBudget: "small"}, nil, "", 4},
		{"mb-amounts", map[string]any{link.MetaBudget: map[string]any{"tool_calls": 2}}, nil, "", 2},
		{"mb-capped", map[string]any{link.MetaBudget: map[string]any{"tool_calls": 50}}, nil, "", 6}, // amounts never pass the default's
		{"mb-request", nil, map[string]any{link.MetaBudget: "small"}, "", 4},
		{"mb-header", nil, nil, "small", 4},
		{"mb-wins", map[string]any{link.MetaBudget: map[string]any{"tool_calls": 3}}, map[string]any{link.MetaBudget: "small"}, "bulk", 3},
	} {
		tk := send(tc.id, tc.msg, tc.req, tc.header)
		r, ok := g.rt.Lookup(tc.id)
		if tk.Status.State != a2a.TaskStateCompleted || !ok || r.Budget().ToolCalls != tc.toolCalls {
			t.Errorf("%s: task %s, request %v; want completed in a request of %d tool calls", tc.id, tk.Status.State, ok, tc.toolCalls)
		} else if r.Budget().ToolCalls == 0 {
			t.Errorf("%s: unlimited", tc.id)
		}
	}
	// Malformed metadata is the client's to mend (link.KindBadBudget): a
	// JSON-RPC error, no task.
	tk, err := trySend("mb-bad", map[string]any{link.MetaBudget: 5.0}, nil, "")
	if err == nil || tk != nil || !strings.Contains(err.Error(), "reach/budget") || !strings.Contains(err.Error(), "budget's name") {
		t.Errorf("reach/budget 5: task %v, error %v; want an error, no task, saying what to send", tk, err)
	}
	if _, ok := g.rt.Lookup("mb-bad"); ok {
		t.Error("a rejected reach/budget began its request")
	}
}

// Across two instances sharing one PostgreSQL store, a call naming a
// completed hand-off's sub-request on the instance that never held it is
// refused as on the one that did: that instance finds the sub-request in
// the store's history, with its parent. Before, it began a root of that id
// (the store's join begins any completed id again) and ran calls naming
// bulk outside the root's budget.
func TestInstancesEndedHandoffNeverHeldHere(t *testing.T) {
	ag := &namingAgent{budget: "bulk"}
	bases := namingInstances(t, ag)
	ag.reach, ag.tools = bases[0], bases[:1]
	if tk, err := ag.send(t.Context(), "tools 2", map[string]any{link.MetaRequest: "never-held"}); err != nil || tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("hand-off: %v %v", tk, err)
	}
	if n := ag.made.Load(); n != 2 {
		t.Fatalf("the hand-off on a: %d tool calls made, want 2", n)
	}
	ag.tools = bases[1:]
	ag.call(t.Context(), mcp.Meta{link.MetaRequest: ag.last.Load().(string), link.MetaBudget: "bulk"}, 2)
	if n := ag.made.Load(); n != 2 {
		t.Fatalf("calls in the ended hand-off %s on b, which never held it, naming bulk: %d tool calls made, want 2", ag.last.Load(), n)
	}
}

// TestInstancesEndedHandoffNotBegunAgain: on two instances sharing one
// PostgreSQL store, a hand-off run on the first alone has ended; its
// sub-agent goes on in it by its id on the second, which never held it,
// naming bulk: refused (request_ended, naming its root; on the model
// route a 400 no SDK retries), nothing run, as on the first. The store began it again as a
// root of its own, under bulk.
func TestInstancesEndedHandoffNotBegunAgain(t *testing.T) {
	ag := &namingAgent{budget: "bulk"}
	bases := namingInstances(t, ag)
	ag.reach, ag.tools = bases[0], []string{bases[0]}
	if tk, err := ag.send(t.Context(), "tools 1", map[string]any{link.MetaRequest: "handoff-across"}); err != nil || tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("hand-off: %v %v", tk, err)
	}
	sub := ag.last.Load().(string)
	ag.tools = []string{bases[1]}
	ag.call(t.Context(), mcp.Meta{link.MetaRequest: sub, link.MetaBudget: "bulk"}, 2)
	if n := ag.made.Load(); n != 1 {
		t.Fatalf("calls in the ended hand-off %s on the other instance naming bulk: %d tool calls made, want 1 (the hand-off's)", sub, n)
	}
	cs, err := mcpAs(t, bases[1], "")
	if err != nil {
		t.Fatal(err)
	}
	// Refused as a call in an ended request is (request_ended, the
	// model's to read): a tool result with isError.
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_order", Arguments: map[string]any{"order_id": "1001"}, Meta: mcp.Meta{link.MetaRequest: sub}})
	said := fmt.Sprint(err)
	if res != nil && len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			said = tc.Text
		}
	}
	if err != nil || !res.IsError || !strings.Contains(said, "hand-off of request handoff-across") || !strings.Contains(said, "Work in request handoff-across") {
		t.Errorf("a call in the ended hand-off on the other instance: %q (error %v), want a tool result with isError naming its root and what to do", said, err)
	}
	hr, _ := http.NewRequestWithContext(t.Context(), "POST", bases[1]+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	hr.Header.Set(link.HeaderRequest, sub)
	hr.Header.Set(link.HeaderBudget, "bulk")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Should-Retry") != "false" || !strings.Contains(string(body), "request_ended") || !strings.Contains(string(body), "Work in request handoff-across") {
		t.Errorf("a model turn in the ended hand-off on the other instance: %d (x-should-retry %q) %s; want 400 request_ended naming its root, not to be retried",
			resp.StatusCode, resp.Header.Get("X-Should-Retry"), body)
	}
}

// TestRestartedEndedHandoffNotBegunAgain: a hand-off has ended and the
// gateway restarted (SQLite store): its sub-request is known only from
// the store. Its sub-agent going on in it by its id, naming bulk, is
// refused (request_ended, naming its root), nothing run, as before the
// restart. It was begun again as a root of its own, under bulk.
func TestRestartedEndedHandoffNotBegunAgain(t *testing.T) {
	dir := t.TempDir()
	ag := &namingAgent{budget: "bulk"}
	up := executorUpstream(t, "names bulk", ag)
	g, base := namingGateway(t, ag, up, &scriptedModel{}, "data: "+dir+"\n")
	ag.reach = base
	if tk, err := ag.send(t.Context(), "tools 1", map[string]any{link.MetaRequest: "handoff-restart"}); err != nil || tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("hand-off: %v %v", tk, err)
	}
	sub := ag.last.Load().(string)
	g.Close()
	g2, base2 := namingGateway(t, ag, up, &scriptedModel{}, "data: "+dir+"\n")
	ag.reach = base2
	ag.call(t.Context(), mcp.Meta{link.MetaRequest: sub, link.MetaBudget: "bulk"}, 2)
	if ag.made.Load() != 1 {
		t.Fatalf("calls in the ended hand-off %s after a restart naming bulk: %d tool calls made, want 1 (the hand-off's)", sub, ag.made.Load())
	}
	if r, ok := g2.rt.Lookup(sub); ok && r.State() != reach.RequestCompleted {
		t.Errorf("the ended hand-off %s runs again after a restart (parent %v)", sub, r.Parent())
	}
	cs, err := mcpAs(t, base2, "")
	if err != nil {
		t.Fatal(err)
	}
	// Refused as a call in an ended request is (request_ended, the
	// model's to read): a tool result with isError.
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_order", Arguments: map[string]any{"order_id": "1001"}, Meta: mcp.Meta{link.MetaRequest: sub}})
	said := fmt.Sprint(err)
	if res != nil && len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			said = tc.Text
		}
	}
	if err != nil || !res.IsError || !strings.Contains(said, "hand-off of request handoff-restart") || !strings.Contains(said, "Work in request handoff-restart") {
		t.Errorf("a call in the ended hand-off after a restart: %q (error %v), want a tool result with isError naming its root and what to do", said, err)
	}
}
