package gateway

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
)

// frameworksCacheOf is frameworksCache for the frameworks of the main
// folder alone (pkgs): a test of OpenAI Agents, the AI SDK and LangGraph
// runs where those are installed, without the rest.
func frameworksCacheOf(t *testing.T, pkgs ...string) (dir, node string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts node processes")
	}
	dir = os.Getenv("REACH_FRAMEWORKS_CACHE")
	if dir == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".cache", "frameworks")
	}
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			frameworksMissing(t, pkg, dir)
		}
	}
	node = filepath.Join(dir, "node_modules", "node", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		frameworksMissing(t, "Node 22", dir)
	}
	agentScripts.Store(dir, writeScript(t, dir, "reach-agent", agentScript(t)))
	return dir, node
}

// frameworksMissing skips the test, saying what is not installed in dir,
// or fails it under REACH_CI (make test), so that CI never passes by
// skipping.
func frameworksMissing(t *testing.T, what, dir string) {
	t.Helper()
	if os.Getenv("REACH_CI") != "" {
		t.Fatalf("%s is not installed in %s: run scripts/frameworks-deps.sh (make test does)", what, dir)
	}
	t.Skipf("%s is not installed in %s: run scripts/frameworks-deps.sh (make test does)", what, dir)
}

// agentScript is testdata/frameworks/agent.mjs, the agent the frameworks
// run.
func agentScript(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile("testdata/frameworks/agent.mjs")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// parallelCases are the frameworks whose runs take several tool calls of
// one model turn and make them at once: OpenAI Agents and the AI SDK
// (Promise.all over the turn's calls) and LangGraph's ToolNode (one task
// per call), each on its defaults and the protocol it speaks first.
var parallelCases = []struct{ fw, mcpClient, modelAPI string }{
	{"openai-agents", "", ""},
	{"openai-agents", "", "chat"},
	{"ai-sdk", "", ""},
	{"langgraph", "", ""},
	{"langgraph", "v2", ""},
}

// TestFrameworksParallelToolCalls: a model turn that asks for three tool
// calls at once, which each framework on its defaults makes concurrently.
// All three are linked under that turn, in the run's one request; a
// model that asks for the same three again and again is stopped by the
// third round, which reaches it as the tool's result; with a
// tool-call budget of 2, two run and the third reaches the model as the
// budget's refusal (a tool result, not an error of the run), and the run
// ends with an answer; a stop while all three are in flight cancels each
// upstream call, and no model turn after it is answered.
func TestFrameworksParallelToolCalls(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "openai", "ai", "@ai-sdk/mcp", "@ai-sdk/openai",
		"@langchain/langgraph", "@langchain/mcp-adapters", "@langchain/openai", "@modelcontextprotocol/client")
	for _, pc := range parallelCases {
		name := pc.fw
		if pc.mcpClient != "" {
			name += "/" + pc.mcpClient
		}
		if pc.modelAPI != "" {
			name += "/" + pc.modelAPI
		}
		t.Run(name, func(t *testing.T) {
			run := func(s *shop, task string, headers map[string]string) agentRun {
				return runAgent(t, dir, node, pc.fw, pc.mcpClient, pc.modelAPI, s.url+"/mcp", s.url+"/v1", task, headers)
			}
			t.Run("linked", func(t *testing.T) {
				s := newShop(t, "")
				r := run(s, "fan", nil)
				want := "read: found nothing new about topic 0 | found nothing new about topic 1 | found nothing new about topic 2"
				if !r.OK || r.Text != want {
					logFrames(t, s.g)
					t.Fatalf("the run: %+v\nwant the text %q", r, want)
				}
				if n := s.up.called("lookup"); n != 3 {
					t.Errorf("%d lookups reached the upstream, want 3", n)
				}
				checkOneGraph(t, s.g, 2, 3)
			})
			t.Run("loop", func(t *testing.T) {
				s := newShop(t, "")
				r := run(s, "fanloop", nil)
				if !r.OK || !strings.Contains(r.Text, "I stop here") || !strings.Contains(r.Text, `up__lookup {"q":"topic 0"}`) {
					logFrames(t, s.g)
					t.Fatalf("the run: %+v\nwant it ended by the model on reach's refusal of a repeated round", r)
				}
				// Two rounds of three ran; the third round's calls repeat
				// calls that returned the same twice.
				if n := s.up.called("lookup"); n != 6 {
					t.Errorf("%d lookups reached the upstream, want 6 (two rounds)", n)
				}
				if st := s.wire.statuses(); slices.ContainsFunc(st, func(c int) bool { return c != http.StatusOK }) {
					t.Errorf("model calls answered %v, want all 200: a loop's refusal is the tool's result", st)
				}
			})
			t.Run("budget", func(t *testing.T) {
				s := newShopBudgets(t, "", "  two: {tool_calls: 2}\n")
				r := run(s, "fan", map[string]string{link.HeaderBudget: "two"})
				if !r.OK || strings.Count(r.Text, "found nothing new about topic") != 2 ||
					!strings.Contains(r.Text, "The tool-call budget of this request") || !strings.Contains(r.Text, "answer with what you have") {
					logFrames(t, s.g)
					t.Fatalf("the run: %+v\nwant an answer with two results and the budget's refusal", r)
				}
				if n := s.up.called("lookup"); n != 2 {
					t.Errorf("%d lookups reached the upstream, want 2 (the budget)", n)
				}
				if st := s.wire.statuses(); len(st) != 2 || st[0] != http.StatusOK || st[1] != http.StatusOK {
					t.Errorf("model calls answered %v, want two, both 200", st)
				}
			})
			t.Run("stop", func(t *testing.T) {
				s := newShop(t, "")
				done := make(chan agentRun, 1)
				go func() { done <- run(s, "fanwait", nil) }()
				for range 3 {
					select {
					case <-s.up.waiting:
					case r := <-done:
						t.Fatalf("the run ended before its three calls began: %+v", r)
					case <-time.After(60 * time.Second):
						t.Fatalf("the three calls did not begin: %d did", s.up.called("wait"))
					}
				}
				req := requestRunning(t, s.g, "up__wait")
				if code, b := do(t, "POST", s.url+"/v1/requests/"+req.ID()+"/cancel", `{"mode":"cancel","reason":"the user pressed stop"}`, nil); code != 200 {
					t.Fatalf("cancel: %d %v", code, b)
				}
				for i := range 3 {
					select {
					case err := <-s.up.waitDone:
						if err == nil {
							t.Errorf("an upstream call was not cancelled")
						}
					case <-time.After(25 * time.Second):
						t.Fatalf("%d of the three upstream calls were cancelled", i)
					}
				}
				r := <-done
				if r.OK && !strings.Contains(r.Text, "cancel") {
					t.Errorf("the run after the stop: %+v", r)
				}
				st := s.wire.statuses()
				for _, c := range st[1:] {
					if c == http.StatusOK {
						t.Errorf("a model turn after the stop was answered: %v", st)
					}
				}
				// Each of the three calls ends cancelled (its frame's state
				// is set as its answer goes back: waited for, not assumed).
				var live []string
				for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					live = live[:0]
					n := 0
					for _, f := range req.Frames() {
						if f.Kind != reach.ToolFrame {
							continue
						}
						n++
						if f.State() != reach.Cancelled {
							live = append(live, fmt.Sprintf("%s %s %v", f.Name, f.Args, f.State()))
						}
					}
					if n == 3 && len(live) == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%d tool calls in the request, not cancelled after the stop: %v", n, live)
					}
				}
				t.Logf("stop: %+v; model calls %v", r, st)
			})
		})
	}
}
