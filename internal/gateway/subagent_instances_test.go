package gateway

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
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
