package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// delegateTurn plays the manager of a run that hands its work to a
// sub-agent (testdata/frameworks/subagent.mjs): the user's task
// "delegate TASK" has the model call the framework's tool "researcher"
// with {"input": TASK} (the sub-agent's first message, which shopModel then
// plays as any task), and answer with what the sub-agent said. Offered a
// hand-off instead (handoff), it calls the hand-off's tool, and the agent
// it hands the run to plays TASK on the same conversation.
func delegateTurn(task string, results []string, handoff bool) (call, args, say string, ok bool) {
	sub, ok := strings.CutPrefix(task, "delegate ")
	if !ok {
		return "", "", "", false
	}
	if handoff && len(results) == 0 {
		return handoffTool, "{}", "", true
	}
	if len(results) == 0 {
		b, _ := json.Marshal(map[string]string{"input": sub})
		return "researcher", string(b), "", true
	}
	return "", "", "manager: " + results[len(results)-1], true
}

// handoffTool is the tool OpenAI Agents gives the model for a hand-off to
// the agent named researcher.
const handoffTool = "transfer_to_researcher"

// runSubagent runs subagent.mjs with framework fw on task against the shop.
func runSubagent(t *testing.T, dir, node, script, fw string, s *shop, task string) agentRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(), "FRAMEWORK="+fw, "MCP_URL="+s.url+"/mcp", "MODEL_URL="+s.url+"/v1", "TASK="+task,
		"MAX_STEPS=50", "OPENAI_AGENTS_DISABLE_TRACING=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", fw, task, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var r agentRun
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("%s %s printed:\n%s", fw, task, out)
	}
	if len(lines) > 1 {
		t.Logf("%s %s also printed:\n%s", fw, task, clip(strings.Join(lines[:len(lines)-1], "\n"), 3000))
	}
	return r
}

// TestFrameworksSubagents: a manager agent that hands its task to a
// sub-agent through a tool, as OpenAI Agents (an agent as a tool), the AI
// SDK (a tool whose execute runs generateText) and LangGraph (a tool that
// invokes a second createReactAgent) do it on their defaults: the sub-agent
// runs in the agent's process, on a conversation of its own that holds
// nothing of the manager's, and names nothing. Reach links its first turn
// by its task, the string the manager's turn gave the tool: the run is one
// request, the sub-agent's turns under the manager's turn that handed it
// the task and its tool calls under its turns; the sub-agent spends the
// manager's budget, not a fresh one, and the spent budget ends the whole
// run with one refusal per agent, none retried; a stop of the manager's
// request stops the sub-agent's tool call in flight and every model call
// after it, the manager's too. Before, each sub-agent's run was a request
// of its own, with a budget of its own, and a stop of it left the manager
// going on. The sub-agent runs in a sub-request carved from the manager's,
// as an A2A hand-off does: a delegate frame under the manager's turn, its
// budget no more than the manager's request had left, and the sub-request
// ended once the manager's next turn goes on.
func TestFrameworksSubagents(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "@langchain/langgraph", "@langchain/mcp-adapters", "@langchain/openai", "ai", "@ai-sdk/mcp", "@ai-sdk/openai")
	src, err := os.ReadFile("testdata/frameworks/subagent.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "reach-subagent", src)
	for _, fw := range []string{"openai-agents", "ai-sdk", "langgraph"} {
		t.Run(fw, func(t *testing.T) {
			t.Run("tree", func(t *testing.T) {
				s := newShop(t, "")
				r := runSubagent(t, dir, node, script, fw, s, "delegate legit")
				if !r.OK || r.Text != "manager: all done" {
					t.Fatalf("the run: %+v", r)
				}
				root := oneRoot(t, s.g)
				var top []*reach.Frame
				sub, calls, delegates := 0, 0, 0
				frames := root.Frames()
				for _, c := range root.Children() {
					frames = append(frames, c.Frames()...)
				}
				for _, f := range frames {
					switch {
					case f.Kind == reach.ModelFrame && f.Parent == nil:
						top = append(top, f)
					case f.Kind == reach.DelegateFrame:
						delegates++
						if f.Parent == nil || f.Parent.Kind != reach.ModelFrame || f.Parent.Parent != nil || f.SubRequest() == nil {
							t.Errorf("delegate frame %s is under %v, want under the manager's turn, with its sub-request", f.ID, f.Parent)
						}
					case f.Kind == reach.ModelFrame:
						sub++
						if f.Parent == nil || f.Parent.Kind != reach.DelegateFrame || f.Request.Parent() != root || len(top) == 0 || f.Parent.Parent != top[0] {
							t.Errorf("sub-agent turn %s is under %v, want in a sub-request under the manager's first turn", f.ID, f.Parent)
						}
					case f.Kind == reach.ToolFrame:
						calls++
						if f.Parent == nil || f.Parent.Kind != reach.ModelFrame || f.Parent.Parent == nil || f.Request.Parent() != root {
							t.Errorf("tool call %s %s is not under a sub-agent's turn", f.Name, f.Args)
						}
					}
				}
				if len(top) != 2 || delegates != 1 || sub != 10 || calls != 9 {
					logFrames(t, s.g)
					t.Errorf("request %s: %d manager turns, %d hand-offs, %d sub-agent turns, %d tool calls; want 2, 1, 10 and 9", root.ID(), len(top), delegates, sub, calls)
				}
				// The manager's second turn went on from the first: the
				// sub-agent is done, its sub-request ended.
				for _, c := range root.Children() {
					if st := c.State(); st != reach.RequestCompleted {
						t.Errorf("the sub-agent's sub-request %s is %s after its manager's last turn, want completed", c.ID(), st)
					}
				}
				if used, reported := root.Usage().Tokens, s.model.tokens.Load(); used < reported {
					t.Errorf("request %s was charged %d tokens, the model reported %d: want every turn's, the sub-agent's too", root.ID(), used, reported)
				}
			})

			t.Run("budget", func(t *testing.T) {
				s := newShopBudgets(t, "", "  default: {tokens: 3000}\n")
				r := runSubagent(t, dir, node, script, fw, s, "delegate budget")
				// The sub-agent's turn refused, its framework gives the
				// refusal to the manager (OpenAI Agents and LangGraph as
				// the tool's error, the AI SDK as its result), whose model
				// reads it and answers (or whose own turn is refused too).
				// A turn whose prompt the budget's estimate leaves no room
				// for is refused before it is sent, the budget not spent:
				// the manager's next turn may fit, and end the run, with
				// no words of reach's where the framework hides a tool's
				// error (OpenAI Agents: "An error occurred while running
				// the tool").
				if !strings.Contains(r.Error+r.Text, "finish with what you have") && !(r.OK && slices.Contains(s.wire.statuses(), http.StatusPaymentRequired)) {
					t.Fatalf("the run: %+v, want it ended by the budget with the message to finish", r)
				}
				root := oneRoot(t, s.g)
				st := s.wire.statuses()
				refused := 0
				for _, c := range st {
					if c == http.StatusPaymentRequired {
						refused++
					} else if c != http.StatusOK {
						t.Errorf("a model call answered %d", c)
					}
				}
				// At most one 402 for the sub-agent's turn and one for the
				// manager's: none retried.
				if refused < 1 || refused > 2 {
					t.Errorf("model calls answered %v, want one or two 402s (the sub-agent's, the manager's)", st)
				}
				// At least what the model reported (a turn whose answer has
				// more words than its usage says is charged the words).
				// The sub-agent's budget is carved from what the manager's
				// request had left: never more than its 3,000 tokens.
				for _, c := range root.Children() {
					if b := c.Budget().Tokens; b <= 0 || b > 3000 || c.DelegateFrame() == nil {
						t.Errorf("the sub-agent's sub-request %s has a budget of %d tokens, want one carved from the manager's 3000", c.ID(), b)
					}
				}
				if len(root.Children()) != 1 {
					t.Errorf("request %s has %d sub-requests, want the sub-agent's", root.ID(), len(root.Children()))
				}
				if used, limit := root.Usage().Tokens, root.Budget().Tokens; used < s.model.tokens.Load() || limit != 3000 {
					t.Errorf("request %s was charged %d tokens of its %d, the model reported %d: want both agents' turns charged to the one budget",
						root.ID(), used, limit, s.model.tokens.Load())
				}
				t.Logf("budget: %d model calls %v, %d tokens: %s", len(st), st, s.model.tokens.Load(), clip(r.Error, 200))
			})

			t.Run("stop", func(t *testing.T) {
				s := newShop(t, "")
				done := make(chan agentRun, 1)
				go func() { done <- runSubagent(t, dir, node, script, fw, s, "delegate cancel") }()
				select {
				case <-s.up.waiting:
				case r := <-done:
					t.Fatalf("the run ended before the sub-agent's tool call began: %+v", r)
				case <-time.After(60 * time.Second):
					t.Fatal("the sub-agent's tool call never began")
				}
				req := requestRunning(t, s.g, "up__wait")
				if fs := req.Frames(); len(fs) == 0 || fs[0].Kind != reach.ModelFrame || fs[0].Parent != nil {
					t.Fatalf("the sub-agent's tool call runs in request %s, which is not the manager's", req.ID())
				}
				if code, b := do(t, "POST", s.url+"/v1/requests/"+req.ID()+"/cancel", `{"mode":"cancel","reason":"the user pressed stop"}`, nil); code != 200 {
					t.Fatalf("cancel: %d %v", code, b)
				}
				select {
				case err := <-s.up.waitDone:
					if err == nil {
						t.Errorf("the sub-agent's tool call was not cancelled")
					}
				case <-time.After(20 * time.Second):
					t.Fatal("the sub-agent's tool call was not cancelled")
				}
				r := <-done
				st := s.wire.statuses()
				if len(st) < 3 {
					t.Fatalf("model calls answered %v, want the manager's after the sub-agent's (the run: %+v)", st, r)
				}
				for _, c := range st[2:] { // the manager's first turn and the sub-agent's came before the stop
					if c != http.StatusForbidden {
						t.Errorf("model calls answered %v, want every one after the stop refused (403)", st)
						break
					}
				}
				if r.OK {
					t.Errorf("the run went on after the stop: %+v", r)
				}
				t.Logf("stop: model calls %v; the run: %s", st, clip(r.Error+r.Text, 200))
			})
		})
	}
}

// oneRoot returns the one request of the run, failing the test if its
// frames are in several.
func oneRoot(t *testing.T, g *Gateway) *reach.Request {
	t.Helper()
	var roots []*reach.Request
	for _, r := range g.rt.Requests() {
		if r.Root() == r && len(r.Frames()) > 0 {
			roots = append(roots, r)
		}
	}
	if len(roots) != 1 {
		logFrames(t, g)
		t.Fatalf("the run is in %d requests, want 1", len(roots))
	}
	return roots[0]
}
