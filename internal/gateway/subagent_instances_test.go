package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/pgtest"
)

// carveInstances is carveShop on two instances, a and b, on one
// PostgreSQL database, in front of one scripted model: two `reach serve`
// behind a load balancer.
func carveInstances(t *testing.T, budgets, subagent string) (a, b *shop) {
	t.Helper()
	url := pgtest.Database(t)
	m := &shopModel{}
	ms := httptest.NewServer(m)
	t.Cleanup(ms.Close)
	var shops [2]*shop
	for i, name := range []string{"a", "b"} {
		cfg, err := config.Parse([]byte(fmt.Sprintf("store: %s\ninstance: %s\ninstance_ttl: 2s\nmodel: {base_url: '%s/v1', name: scripted, subagent_budget: %s}\nbudgets:\n%s",
			url, name, ms.URL, subagent, budgets)), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		g := newTestGateway(t, cfg)
		shops[i] = &shop{g: g, url: serveTest(t, g).URL, model: m, modelURL: ms.URL}
	}
	return shops[0], shops[1]
}

// TestSubagentCarvedAcrossInstances: a sub-agent that a manager's tool
// runs in the agent's own process, whose turns the balancer sends to
// another instance than its manager's, runs in a sub-request carved from
// the manager's request, as on one instance: the instance the manager's
// turn ran on recorded the task it handed in the store, and the other
// adopts the manager's request from it. Its share spent refuses its turn
// (402), and the manager goes on. Before, the sub-agent's turns began a
// request of their own on the other instance, under the default budget:
// fifty turns, none refused.
func TestSubagentCarvedAcrossInstances(t *testing.T) {
	a, b := carveInstances(t, "  default: {tokens: 50000}\n  sub: {tokens: 2000}\n", "sub")
	mgr := []map[string]any{{"role": "user", "content": "delegate budget"}}
	code, _, tc := chatTurn(t, a, mgr, "researcher")
	if code != 200 || tc[1] != "researcher" {
		t.Fatalf("the manager's turn on a: %d, %v", code, tc)
	}
	root := oneRoot(t, a.g)
	st, refusal := runSub(t, b, "budget", 50)
	if len(st) < 2 || st[len(st)-1] != 402 || !strings.Contains(refusal, "budget") {
		t.Fatalf("the sub-agent's turns on b answered %v (%q), want 200s then one 402 of its share", st, refusal)
	}
	// One tree: on b, the sub-request is under the manager's request,
	// its delegate frame under the manager's turn.
	broot, ok := b.g.rt.Lookup(root.ID())
	if !ok {
		logFrames(t, b.g)
		t.Fatalf("b does not hold the manager's request %s", root.ID())
	}
	sub, d := subOf(t, broot)
	if sub.ParentID() != root.ID() || d == nil || d.Kind != reach.DelegateFrame || d.Parent == nil || d.Parent.Kind != reach.ModelFrame || d.Name != "researcher" {
		t.Fatalf("the sub-request %s (parent %s), its delegate frame %+v: want one named researcher under the manager's turn", sub.ID(), sub.ParentID(), d)
	}
	if b := sub.Budget(); b.Tokens != 2000 {
		t.Errorf("the sub-request's budget %+v, want the share of 2000 tokens", b)
	}
	// The manager goes on, on a, with the refusal as the tool's result.
	if code, out, _ := chatTurn(t, a, append(mgr, called(tc, "Error: "+refusal)...), "researcher"); code != 200 {
		t.Fatalf("the manager's turn after the refusal: %d %v", code, out)
	}
}

// TestSubagentStoppedAcrossInstances: a stop of the manager's request on
// its instance stops the sub-agent's next turn on the other.
func TestSubagentStoppedAcrossInstances(t *testing.T) {
	a, b := carveInstances(t, "  default: {tokens: 50000}\n  sub: {tokens: 20000}\n", "sub")
	mgr := []map[string]any{{"role": "user", "content": "delegate budget"}}
	if code, _, tc := chatTurn(t, a, mgr, "researcher"); code != 200 || tc[1] != "researcher" {
		t.Fatalf("the manager's turn on a: %d, %v", code, tc)
	}
	root := oneRoot(t, a.g)
	msgs := []map[string]any{{"role": "user", "content": "budget"}}
	code, _, tc := chatTurn(t, b, msgs, "up__lookup")
	if code != 200 || tc[0] == "" {
		t.Fatalf("the sub-agent's first turn on b: %d %v", code, tc)
	}
	if status, out := do(t, "POST", a.url+"/v1/requests/"+root.ID()+"/cancel", `{"mode":"cancel","reason":"enough"}`, nil); status != 200 {
		t.Fatalf("cancel on a: %d %v", status, out)
	}
	msgs = append(msgs, called(tc, "found nothing new")...)
	code, out, _ := chatTurn(t, b, msgs, "up__lookup")
	if code == 200 || !strings.Contains(fmt.Sprint(out), "stop") {
		t.Fatalf("the sub-agent's turn on b after its manager's request was stopped on a: %d %v, want it refused, stopped", code, out)
	}
}

// TestSubagentAcrossInstancesOnlyItsCaller: on another instance, a first
// turn whose task a turn of alice handed links to it only under alice's
// own credentials: not for another principal of her tenant who sends the
// same task (the store keeps her tasks by a digest of her, her tenant and
// the task), nor under another of alice's keys, with other roles (as
// CheckCaller refuses a call of hers into the request under it).
func TestSubagentAcrossInstancesOnlyItsCaller(t *testing.T) {
	db := pgtest.Database(t)
	m := &shopModel{}
	ms := httptest.NewServer(m)
	t.Cleanup(ms.Close)
	kdir := t.TempDir()
	ks, err := auth.OpenKeys(auth.KeysPath(kdir))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for name, spec := range map[string]auth.KeySpec{"alice": {Principal: "alice", Tenant: "acme", Roles: []string{"analyst"}},
		"alice-plain": {Principal: "alice", Tenant: "acme"}, "bob": {Principal: "bob", Tenant: "acme", Roles: []string{"analyst"}}} {
		if keys[name], _, err = ks.Create(spec); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(auth.KeysPath(kdir))
	if err != nil {
		t.Fatal(err)
	}
	var gs [2]*Gateway
	var urls [2]string
	for i, name := range []string{"a", "b"} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Dir(auth.KeysPath(dir)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(auth.KeysPath(dir), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse([]byte(fmt.Sprintf("store: %s\ninstance: %s\ninstance_ttl: 2s\ndata: %s\nauth: {keys: true}\nmodel: {base_url: '%s/v1', name: scripted, subagent_budget: sub}\nbudgets:\n  default: {tokens: 50000}\n  sub: {tokens: 2000}\n",
			db, name, dir, ms.URL)), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		gs[i] = newTestGateway(t, cfg)
		urls[i] = serveTest(t, gs[i]).URL
	}
	turn := func(base, who string, msgs []map[string]any, tool string) (int, [3]string) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"model": "scripted", "messages": msgs, "tools": []any{map[string]any{"type": "function",
			"function": map[string]any{"name": tool, "parameters": map[string]any{"type": "object"}}}}})
		code, out := do(t, "POST", base+"/v1/chat/completions", string(b), map[string]string{"Authorization": "Bearer " + keys[who]})
		var tc [3]string
		if c, ok := path(out, "choices", 0, "message", "tool_calls", 0).(map[string]any); ok {
			tc[0], _ = c["id"].(string)
			tc[1], _ = path(c, "function", "name").(string)
		}
		return code, tc
	}
	if code, tc := turn(urls[0], "alice", []map[string]any{{"role": "user", "content": "delegate budget"}}, "researcher"); code != 200 || tc[1] != "researcher" {
		t.Fatalf("alice's manager turn on a: %d %v", code, tc)
	}
	root := oneRoot(t, gs[0])
	subs := func() int {
		r, ok := gs[1].rt.Lookup(root.ID())
		if !ok {
			return 0
		}
		return len(r.Children())
	}
	for _, who := range []string{"bob", "alice-plain"} {
		if code, _ := turn(urls[1], who, []map[string]any{{"role": "user", "content": "budget"}}, "up__lookup"); code != 200 {
			t.Fatalf("%s's first turn on b: %d", who, code)
		}
		if n := subs(); n != 0 {
			t.Fatalf("%s's first turn of alice's task on b began %d sub-requests of alice's request, want none", who, n)
		}
	}
	if code, _ := turn(urls[1], "alice", []map[string]any{{"role": "user", "content": "budget"}}, "up__lookup"); code != 200 {
		t.Fatalf("alice's sub-agent's first turn on b: %d", code)
	}
	if n := subs(); n != 1 {
		t.Fatalf("alice's sub-agent's first turn on b: %d sub-requests of her request there, want 1", n)
	}
}

// turnOn is chatTurn that returns the request the turn ran in too
// (Reach-Request).
func turnOn(t *testing.T, s *shop, messages []map[string]any, tools ...string) (int, string, [3]string) {
	t.Helper()
	var ts []any
	for _, n := range tools {
		ts = append(ts, map[string]any{"type": "function", "function": map[string]any{"name": n, "parameters": map[string]any{"type": "object"}}})
	}
	b, _ := json.Marshal(map[string]any{"model": "scripted", "messages": messages, "tools": ts})
	resp, err := http.Post(s.url+"/v1/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	var tc [3]string
	if c, ok := path(out, "choices", 0, "message", "tool_calls", 0).(map[string]any); ok {
		tc[0], _ = c["id"].(string)
		tc[1], _ = path(c, "function", "name").(string)
		tc[2], _ = path(c, "function", "arguments").(string)
	}
	return resp.StatusCode, resp.Header.Get(link.HeaderRequest), tc
}

// storedParent is the parent request of request id as the shared store
// keeps it.
func storedParent(t *testing.T, g *Gateway, id string) string {
	t.Helper()
	r, err := g.store.GetRequest(t.Context(), id)
	if err != nil {
		t.Fatalf("the store holds no request %s: %v", id, err)
	}
	return r.Parent
}

// TestSubagentTaskSharedAcrossInstances: whether a sub-agent's first turn
// joins the sub-request a sub-agent given the same task runs in already is
// decided for every instance by the store (the task's record, with the
// sub-request begun from it), as one instance's memory decides: the first
// turn, sent again to the manager's own instance after it began its
// sub-request on the other, joins that sub-request. Before, a began a
// second sub-request, from its memory, which did not know b had taken the
// task.
func TestSubagentTaskSharedAcrossInstances(t *testing.T) {
	a, b := carveInstances(t, "  default: {tokens: 50000}\n  sub: {tokens: 20000}\n", "sub")
	mgr := []map[string]any{{"role": "user", "content": "delegate budget"}}
	code, r1, tc := turnOn(t, a, mgr, "researcher")
	if code != 200 || tc[1] != "researcher" || r1 == "" {
		t.Fatalf("the manager's turn on a: %d %s %v", code, r1, tc)
	}
	first := []map[string]any{{"role": "user", "content": "budget"}}
	code, s1, _ := turnOn(t, b, first, "up__lookup")
	if code != 200 || s1 == r1 || storedParent(t, b.g, s1) != r1 {
		t.Fatalf("the sub-agent's first turn on b: %d in %s, want a sub-request of %s", code, s1, r1)
	}
	code, again, _ := turnOn(t, a, first, "up__lookup")
	if code != 200 || again != s1 {
		t.Fatalf("the sub-agent's first turn sent again, to a: %d in %s, want the sub-request %s it runs in on b", code, again, s1)
	}
}

// TestSubagentWaitingTaskAcrossInstances: with a first manager's task
// taken by its sub-agent on b, a second manager's turn handing the same
// task is the one a new sub-agent's first turn joins, on a, as one
// instance decides (the one request whose choice waits). Before, a's
// memory, which did not know b had taken the first manager's task, saw two
// requests waiting for it and linked none: the sub-agent ran in a request
// of its own, outside the second manager's budget.
func TestSubagentWaitingTaskAcrossInstances(t *testing.T) {
	a, b := carveInstances(t, "  default: {tokens: 50000}\n  sub: {tokens: 20000}\n", "sub")
	mgr := []map[string]any{{"role": "user", "content": "delegate budget"}}
	code, r1, tc := turnOn(t, a, mgr, "researcher")
	if code != 200 || tc[1] != "researcher" || r1 == "" {
		t.Fatalf("the first manager's turn on a: %d %s %v", code, r1, tc)
	}
	first := []map[string]any{{"role": "user", "content": "budget"}}
	if code, s1, _ := turnOn(t, b, first, "up__lookup"); code != 200 || storedParent(t, b.g, s1) != r1 {
		t.Fatalf("the first sub-agent's first turn on b: %d in %s, want a sub-request of %s", code, s1, r1)
	}
	code, r2, tc2 := turnOn(t, a, mgr, "researcher")
	if code != 200 || tc2[1] != "researcher" || r2 == "" || r2 == r1 {
		t.Fatalf("the second manager's turn on a: %d %s %v", code, r2, tc2)
	}
	code, s2, _ := turnOn(t, a, first, "up__lookup")
	if code != 200 || s2 == r2 || storedParent(t, a.g, s2) != r2 {
		t.Fatalf("a new sub-agent's first turn on a: %d in %s (parent %q), want a sub-request of the second manager's %s", code, s2, storedParent(t, a.g, s2), r2)
	}
}

// TestSubagentEndedAcrossInstances: a sub-agent's sub-request that runs on
// another instance than its manager's ends when the manager's next turn,
// on its own instance, shows the tool call that ran it answered, as on one
// instance (link.Owned.EndSubs): through the cluster's end, stored and
// heard by every instance. Before, it ran on until its root's end or idle
// gap (five minutes).
func TestSubagentEndedAcrossInstances(t *testing.T) {
	a, b := carveInstances(t, "  default: {tokens: 50000}\n  sub: {tokens: 20000}\n", "sub")
	mgr := []map[string]any{{"role": "user", "content": "delegate budget"}}
	code, r1, tc := turnOn(t, a, mgr, "researcher")
	if code != 200 || tc[1] != "researcher" {
		t.Fatalf("the manager's turn on a: %d %v", code, tc)
	}
	code, s1, _ := turnOn(t, b, []map[string]any{{"role": "user", "content": "budget"}}, "up__lookup")
	if code != 200 || storedParent(t, b.g, s1) != r1 {
		t.Fatalf("the sub-agent's first turn on b: %d in %s, want a sub-request of %s", code, s1, r1)
	}
	sub, ok := b.g.rt.Lookup(s1)
	if !ok || sub.State() != reach.RequestRunning {
		t.Fatalf("b runs no sub-request %s", s1)
	}
	if code, in, _ := turnOn(t, a, append(mgr, called(tc, "the budget is fine")...), "researcher"); code != 200 || in != r1 {
		t.Fatalf("the manager's next turn on a: %d in %s, want %s", code, in, r1)
	}
	select {
	case <-sub.Context().Done():
	case <-time.After(30 * time.Second): // a guard against a hang, not an order
		t.Fatalf("the sub-request %s on b still runs (%s) after its manager's conversation went on on a", s1, sub.State())
	}
	if st := sub.State(); st != reach.RequestCompleted { // ended before its context is
		t.Fatalf("the sub-request %s on b is %s, want ended", s1, st)
	}
}
