package gateway

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestFrameworksRewordedSearch runs each framework on its defaults through
// reach on a trajectory whose arguments change while nothing new is
// learned: the model asks the help centre one question in other words each
// time ("refund policy", "policy on refunds", "how do refunds work", ...),
// and every search finds nothing. No call repeats another, so the loop
// guard's repeat never fires; its rephrase refuses the fourth asking. The
// refusal reaches the model as the tool's result (every model call answered
// 200), with reach's text (what repeated, what to do instead), and the
// model acts on it: it stops, in the same run, after 3 searches ran and one
// was refused, none retried. The run is one request, each tool call under
// the turn that chose it, every turn's tokens charged to it, and its audit
// holds the refusal with its detector's code. Without reach the framework
// runs all eight rewordings.
func TestFrameworksRewordedSearch(t *testing.T) {
	dir, node := frameworksCache(t)
	for _, fc := range frameworkCases {
		if fc.noBaseline && fc.fw != "llamaindex" && fc.fw != "strands" && fc.fw != "ax" { // each framework once, on its defaults
			continue
		}
		t.Run(fc.fw+"/"+fc.protocol, func(t *testing.T) {
			s := newSearchShop(t, fc.config)
			r := runAgent(t, dir, node, fc.fw, fc.mcpClient, fc.modelAPI, s.url+"/mcp", s.url+"/v1", "reword", nil)
			text := r.Text
			if fc.fw == "llamaindex" {
				text = strings.ReplaceAll(text, `\n`, "\n")
			}
			if !r.OK || !strings.HasPrefix(text, "I stop here: ") || !strings.Contains(text, "in other words") {
				logFrames(t, s.g)
				t.Fatalf("the run: %+v (searches %d), want the model to stop on reach's refusal", r, s.up.called("search"))
			}
			if n := s.up.called("search"); n != 3 {
				t.Errorf("%d searches ran, want 3 (the fourth refused)", n)
			}
			for _, c := range s.wire.statuses() {
				if c != http.StatusOK {
					t.Errorf("model calls answered %v, want all 200: the refusal is the tool's result", s.wire.statuses())
					break
				}
			}
			checkOneGraph(t, s.g, 5, 4)
			root := oneRoot(t, s.g)
			refused := 0
			for _, f := range root.Frames() {
				if f.Kind != reach.ToolFrame || f.State() != reach.Refused {
					continue
				}
				refused++
				if e := f.Err(); e == nil || e.Type != reach.TypeLoop || e.Code != "loop_rephrase" {
					t.Errorf("tool call %s %s refused with %+v, want the loop guard's rephrase", f.Name, f.Args, e)
				}
			}
			if refused != 1 {
				t.Errorf("%d tool calls refused, want 1 (none retried)", refused)
			}
			if used, reported := root.Usage().Tokens, s.model.tokens.Load(); used < reported {
				t.Errorf("request %s was charged %d tokens, the model reported %d", root.ID(), used, reported)
			}
			s.g.audit.Flush(t.Context())
			code, out := do(t, "GET", s.url+"/v1/audit?request="+root.ID(), "", nil)
			if code != http.StatusOK {
				t.Fatalf("GET /v1/audit: %d %v", code, out)
			}
			events, _ := out["events"].([]any)
			audited := 0
			for _, e := range events {
				if path(e, "event", "kind") == "tool" && path(e, "event", "decision") == "refused" {
					audited++
					if c := fmt.Sprint(path(e, "event", "code")); c != "loop_rephrase" {
						t.Errorf("the audit's refusal has code %s, want loop_rephrase", c)
					}
				}
			}
			if audited != 1 {
				t.Errorf("the audit of request %s holds %d refused tool calls, want 1: %v", root.ID(), audited, clip(fmt.Sprint(events), 2000))
			}
			t.Logf("reworded search through reach: %d searches ran, %d model turns; the model read: %s", s.up.called("search"), s.model.turns.Load(), clip(text, 300))
			if fc.noBaseline {
				return
			}
			// The same run without reach: every rewording runs.
			direct := newSearchShop(t, fc.config)
			d := runAgent(t, dir, node, fc.fw, fc.mcpClient, fc.modelAPI, direct.upURL, direct.modelURL+"/v1", "reword", nil)
			if n := direct.up.called("search"); n != len(rewordings) {
				t.Errorf("without reach %d searches ran, want all %d (%s)", n, len(rewordings), clip(d.Error+d.Text, 200))
			}
		})
	}
}

// TestFrameworksSubagentRewords: the reworded search of
// TestFrameworksRewordedSearch run by a sub-agent (an agent as a tool, an
// AI SDK tool that runs generateText, a LangGraph tool that invokes a
// second agent) and by the agent a hand-off gave the run (OpenAI Agents'
// handoffs), each on its defaults. Reach links the sub-agent's searches
// into the manager's request and refuses its fourth asking there, as the
// tool's result the sub-agent's model reads and stops on; the manager
// answers with what the sub-agent said. Nothing is retried and no model
// call refused.
func TestFrameworksSubagentRewords(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "@langchain/langgraph", "@langchain/mcp-adapters", "@langchain/openai", "ai", "@ai-sdk/mcp", "@ai-sdk/openai")
	src, err := os.ReadFile("testdata/frameworks/subagent.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "reach-subagent", src)
	for _, fw := range []string{"openai-agents", "ai-sdk", "langgraph", "openai-agents-handoff"} {
		t.Run(fw, func(t *testing.T) {
			s := newSearchShop(t, "")
			r := runSubagent(t, dir, node, script, fw, s, "delegate reword")
			want := "manager: I stop here: "
			if fw == "openai-agents-handoff" {
				want = "I stop here: " // the researcher's answer is the run's
			}
			if !r.OK || !strings.HasPrefix(r.Text, want) || !strings.Contains(r.Text, "in other words") {
				logFrames(t, s.g)
				t.Fatalf("the run: %+v (searches %d), want the sub-agent stopped by reach's refusal", r, s.up.called("search"))
			}
			if n := s.up.called("search"); n != 3 {
				t.Errorf("%d searches ran, want 3 (the fourth refused)", n)
			}
			for _, c := range s.wire.statuses() {
				if c != http.StatusOK {
					t.Errorf("model calls answered %v, want all 200: the refusal is the tool's result", s.wire.statuses())
					break
				}
			}
			// An in-process sub-agent runs in a sub-request carved from the
			// manager's (a hand-off's researcher goes on in the manager's
			// own): the refusal is in the request's tree, once.
			root := oneRoot(t, s.g)
			tree := append([]*reach.Request{root}, root.Children()...)
			if fw != "openai-agents-handoff" && len(root.Children()) != 1 {
				t.Errorf("request %s has %d sub-requests, want the sub-agent's", root.ID(), len(root.Children()))
			}
			refused := 0
			for _, r := range tree {
				for _, f := range r.Frames() {
					if f.Kind != reach.ToolFrame || f.State() != reach.Refused {
						continue
					}
					refused++
					if fw != "openai-agents-handoff" && r == root {
						t.Errorf("the refused call %s is in the manager's request, want the sub-agent's", f.Args)
					}
					if e := f.Err(); e == nil || e.Code != "loop_rephrase" {
						t.Errorf("tool call %s %s refused with %+v, want the loop guard's rephrase", f.Name, f.Args, e)
					}
					if f.Parent == nil || f.Parent.Kind != reach.ModelFrame {
						t.Errorf("the refused call %s is under no model turn", f.Args)
					}
				}
			}
			if refused != 1 {
				logFrames(t, s.g)
				t.Errorf("%d tool calls refused in request %s and its sub-requests, want 1 (none retried)", refused, root.ID())
			}
		})
	}
}
