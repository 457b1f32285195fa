package gateway

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
)

// carveShop is a gateway in front of the scripted model (shopModel), with
// budgets (lines of "  name: {...}\n") and the model's subagent_budget.
func carveShop(t *testing.T, budgets, subagent string) *shop {
	t.Helper()
	m := &shopModel{}
	ms := httptest.NewServer(m)
	t.Cleanup(ms.Close)
	sb := ""
	if subagent != "" {
		sb = ", subagent_budget: " + subagent
	}
	cfg, err := config.Parse([]byte(fmt.Sprintf("model: {base_url: '%s/v1', name: scripted%s}\nbudgets:\n%s", ms.URL, sb, budgets)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	return &shop{g: g, url: srv.URL, model: m, modelURL: ms.URL}
}

// chatTurn sends one chat completions turn of messages offering tools and
// returns its status, its answer and the tool call it chose (id, name,
// arguments), if any.
func chatTurn(t *testing.T, s *shop, messages []map[string]any, tools ...string) (int, map[string]any, [3]string) {
	t.Helper()
	var ts []any
	for _, n := range tools {
		ts = append(ts, map[string]any{"type": "function", "function": map[string]any{"name": n, "parameters": map[string]any{"type": "object"}}})
	}
	body := map[string]any{"model": "scripted", "messages": messages}
	if len(ts) > 0 {
		body["tools"] = ts
	}
	b, _ := json.Marshal(body)
	code, out := do(t, "POST", s.url+"/v1/chat/completions", string(b), nil)
	var tc [3]string
	if c, ok := path(out, "choices", 0, "message", "tool_calls", 0).(map[string]any); ok {
		tc[0], _ = c["id"].(string)
		tc[1], _ = path(c, "function", "name").(string)
		tc[2], _ = path(c, "function", "arguments").(string)
	}
	return code, out, tc
}

// called is the assistant message of tool call tc and its result.
func called(tc [3]string, result string) []map[string]any {
	return []map[string]any{
		{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": tc[0], "type": "function",
			"function": map[string]any{"name": tc[1], "arguments": tc[2]}}}},
		{"role": "tool", "tool_call_id": tc[0], "content": result},
	}
}

// runSub plays the sub-agent a manager's tool runs in the agent's process
// on task, as OpenAI Agents' agent as a tool does: a conversation of its
// own that begins with task, each tool it calls answered "found nothing
// new", until a turn is refused or it answers. It returns the statuses of
// its turns and the refusal's message, if any.
func runSub(t *testing.T, s *shop, task string, most int) ([]int, string) {
	t.Helper()
	msgs := []map[string]any{{"role": "user", "content": task}}
	var st []int
	for range most {
		code, out, tc := chatTurn(t, s, msgs, "up__lookup")
		st = append(st, code)
		if code != 200 {
			msg, _ := path(out, "error", "message").(string)
			return st, msg
		}
		if tc[0] == "" {
			return st, ""
		}
		msgs = append(msgs, called(tc, "found nothing new")...)
	}
	return st, ""
}

// subOf returns the one sub-request of root and its delegate frame.
func subOf(t *testing.T, root *reach.Request) (*reach.Request, *reach.Frame) {
	t.Helper()
	cs := root.Children()
	if len(cs) != 1 {
		t.Fatalf("request %s has %d sub-requests, want the sub-agent's one", root.ID(), len(cs))
	}
	return cs[0], cs[0].DelegateFrame()
}

// TestSubagentCarved: a sub-agent that a manager's tool runs in the
// agent's own process (linked by its task, the string the manager's turn
// gave the tool) runs in a sub-request carved from the manager's request,
// as an A2A hand-off does: a delegate frame under the manager's turn, the
// sub-agent's turns in the sub-request under it, its budget the configured
// share (model.subagent_budget) capped at what the manager's request has
// left; its own share spent refuses its turn (402, not to be retried) while
// the manager goes on with the refusal as the tool's result, and the
// manager's next turn ends the sub-request. A share larger than what is
// left is capped: the carve lifts nothing. Before, the sub-agent's turns
// nested in the manager's request itself, with no budget of its own.
func TestSubagentCarved(t *testing.T) {
	t.Run("share", func(t *testing.T) {
		s := carveShop(t, "  default: {tokens: 50000}\n  sub: {tokens: 2000}\n", "sub")
		mgr := []map[string]any{{"role": "user", "content": "delegate budget"}}
		code, _, tc := chatTurn(t, s, mgr, "researcher")
		if code != 200 || tc[1] != "researcher" {
			t.Fatalf("the manager's turn: %d, %v", code, tc)
		}
		st, refusal := runSub(t, s, "budget", 50)
		if len(st) < 2 || st[len(st)-1] != 402 || !strings.Contains(refusal, "budget") {
			t.Fatalf("the sub-agent's turns answered %v (%q), want 200s then one 402 of its budget", st, refusal)
		}
		root := oneRoot(t, s.g)
		sub, d := subOf(t, root)
		if d == nil || d.Kind != reach.DelegateFrame || d.Parent == nil || d.Parent.Kind != reach.ModelFrame || d.Parent.Parent != nil || d.Name != "researcher" {
			t.Fatalf("the sub-request's delegate frame %+v, want one named researcher under the manager's turn", d)
		}
		if b := sub.Budget(); b.Tokens != 2000 {
			t.Errorf("the sub-request's budget %+v, want the share of 2000 tokens", b)
		}
		turns := 0
		for _, f := range sub.Frames() {
			if f.Kind == reach.ModelFrame {
				turns++
				if f.Parent != d {
					t.Errorf("sub-agent turn %s is under %v, want under the delegate frame", f.ID, f.Parent)
				}
			}
		}
		if turns != len(st) {
			t.Errorf("the sub-request has %d turns, want the %d sent (the last refused)", turns, len(st))
		}
		used, all := sub.Usage().Tokens, root.Usage().Tokens
		if used == 0 || all < used {
			t.Errorf("the sub-agent spent %d tokens, its manager's request %d: want the sub-agent's counted in both", used, all)
		}
		// The manager goes on with the refusal as the tool's result: its
		// request has budget left, and its turn ends the sub-request.
		code, out, _ := chatTurn(t, s, append(mgr, called(tc, "Error: "+refusal)...), "researcher")
		if code != 200 {
			t.Fatalf("the manager's turn after the refusal: %d %v", code, out)
		}
		if st := sub.State(); st == reach.RequestRunning {
			t.Errorf("the sub-request is %s after its manager went on, want it ended", st)
		}
		if !d.State().Done() {
			t.Errorf("the delegate frame is %v after its manager went on, want it done", d.State())
		}
	})

	t.Run("bounded by the parent", func(t *testing.T) {
		s := carveShop(t, "  default: {tokens: 1500}\n  sub: {tokens: 100000}\n", "sub")
		mgr := []map[string]any{{"role": "user", "content": "delegate budget"}}
		if code, _, _ := chatTurn(t, s, mgr, "researcher"); code != 200 {
			t.Fatalf("the manager's turn: %d", code)
		}
		root := oneRoot(t, s.g)
		left := root.Remaining().Tokens
		st, _ := runSub(t, s, "budget", 50)
		if st[len(st)-1] != 402 {
			t.Fatalf("the sub-agent's turns answered %v, want a 402 at last", st)
		}
		sub, _ := subOf(t, root)
		if b := sub.Budget().Tokens; b > left || b == 0 {
			t.Errorf("the sub-request was carved %d tokens, its manager's request had %d left: want no more", b, left)
		}
	})

	t.Run("unconfigured", func(t *testing.T) {
		s := carveShop(t, "  default: {tokens: 5000, turns: 7}\n", "")
		mgr := []map[string]any{{"role": "user", "content": "delegate budget"}}
		code, _, tc := chatTurn(t, s, mgr, "researcher")
		if code != 200 {
			t.Fatalf("the manager's turn: %d", code)
		}
		st, refusal := runSub(t, s, "budget", 50)
		// Its turn budget is what its manager's request has left: 6.
		if len(st) != 7 || st[6] != 402 || !strings.Contains(refusal, "turn") {
			t.Fatalf("the sub-agent's turns answered %v (%q), want six then a 402 of the turn budget", st, refusal)
		}
		root := oneRoot(t, s.g)
		sub, _ := subOf(t, root)
		if b := sub.Budget(); b.Turns != 6 || b.Tokens == 0 || b.Tokens > 5000 {
			t.Errorf("the sub-request's budget %+v, want what its manager's request had left (6 turns, tokens)", b)
		}
		// The manager's request has no turn left either: one 402 of it.
		if code, _, _ := chatTurn(t, s, append(mgr, called(tc, "Error: "+refusal)...), "researcher"); code != 402 {
			t.Errorf("the manager's turn past its turns answered %d, want 402", code)
		}
	})

	t.Run("stop", func(t *testing.T) {
		s := carveShop(t, "  default: {tokens: 50000}\n", "")
		mgr := []map[string]any{{"role": "user", "content": "delegate budget"}}
		if code, _, _ := chatTurn(t, s, mgr, "researcher"); code != 200 {
			t.Fatalf("the manager's turn: %d", code)
		}
		msgs := []map[string]any{{"role": "user", "content": "budget"}}
		code, _, tc := chatTurn(t, s, msgs, "up__lookup")
		if code != 200 || tc[0] == "" {
			t.Fatalf("the sub-agent's first turn: %d %v", code, tc)
		}
		root := oneRoot(t, s.g)
		sub, d := subOf(t, root)
		if c, b := do(t, "POST", s.url+"/v1/requests/"+root.ID()+"/cancel", `{"mode":"cancel","reason":"the user pressed stop"}`, nil); c != 200 {
			t.Fatalf("cancel: %d %v", c, b)
		}
		if code, out, _ := chatTurn(t, s, append(msgs, called(tc, "found nothing new")...), "up__lookup"); code != 403 {
			t.Errorf("the sub-agent's turn after its manager's request was stopped answered %d %v, want 403", code, out)
		}
		if st := sub.State(); st == reach.RequestRunning || !d.State().Done() {
			t.Errorf("after the stop the sub-request is %s, its delegate frame %v; want both stopped", st, d.State())
		}
	})

	t.Run("idle end", func(t *testing.T) {
		s := carveShop(t, "  default: {tokens: 50000}\n", "")
		if code, _, _ := chatTurn(t, s, []map[string]any{{"role": "user", "content": "delegate legit"}}, "researcher"); code != 200 {
			t.Fatal("the manager's turn")
		}
		if code, _, _ := chatTurn(t, s, []map[string]any{{"role": "user", "content": "legit"}}); code != 200 {
			t.Fatal("the sub-agent's turn")
		}
		root := oneRoot(t, s.g)
		sub, _ := subOf(t, root)
		s.g.owned.End(root.ID())
		if st := sub.State(); st != reach.RequestCompleted {
			t.Errorf("the sub-request is %s once its root ended, want completed", st)
		}
	})
}
