package gateway

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// TestFrameworksRefusals runs each framework on its defaults through reach
// into the refusals of a tool call that reach the model as the tool's
// result: a policy that denies the call by its arguments, an approval that
// is not given while the call waits (pending), and an approval denied. In
// each the run goes on, the model reads reach's text, the tool does not
// run, and no model call is refused or retried.
func TestFrameworksRefusals(t *testing.T) {
	dir, node := frameworksCache(t)
	pol := filepath.Join(t.TempDir(), "shop.cedar")
	if err := os.WriteFile(pol, []byte(`@id("all")
permit (principal, action, resource);

@id("big-refunds")
@reason("refunds of order 1001 need a manager: ask one to do it")
forbid (principal, action == Reach::Action::"call", resource == Reach::Tool::"up__refund")
when { context.arguments has order && context.arguments.order == "1001" };
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, fc := range frameworkCases {
		if fc.noBaseline && fc.fw != "llamaindex" && fc.fw != "strands" && fc.fw != "ax" { // LlamaIndex, Strands and Ax have one case each, with no baseline
			continue // each framework once, on its defaults: TestFrameworks tries the rest
		}
		name := fc.fw + "/" + fc.protocol
		if fc.modelAPI != "" {
			name += "/" + fc.modelAPI
		}
		t.Run(name, func(t *testing.T) {
			run := func(s *shop) agentRun {
				return runAgent(t, dir, node, fc.fw, fc.mcpClient, fc.modelAPI, s.url+"/mcp", s.url+"/v1", "approve", nil)
			}
			check := func(t *testing.T, s *shop, r agentRun, want ...string) {
				t.Helper()
				if !r.OK || !strings.HasPrefix(r.Text, "refund: ") {
					t.Fatalf("the run: %+v, want it to go on to the model's answer", r)
				}
				text := r.Text
				if fc.fw == "llamaindex" { // it gives the model a tool's output as JSON with the quotes taken out: a newline is \n
					text = strings.ReplaceAll(text, `\n`, "\n")
				}
				for _, w := range want {
					if !strings.Contains(text, w) {
						t.Errorf("the model read %q, want it to say %q", r.Text, w)
					}
				}
				if n := s.up.called("refund"); n != 0 {
					t.Errorf("%d refunds ran, want none", n)
				}
				for _, c := range s.wire.statuses() {
					if c != http.StatusOK {
						t.Errorf("model calls answered %v, want all 200", s.wire.statuses())
						break
					}
				}
				if n := len(s.wire.statuses()); n != 2 {
					t.Errorf("%d model calls, want 2 (the call, the answer)", n)
				}
				t.Logf("the model read: %s", clip(r.Text, 400))
			}
			t.Run("policy", func(t *testing.T) {
				s := newShop(t, fc.config+"policy: {path: "+pol+"}\n")
				check(t, s, run(s), "refunds of order 1001 need a manager", "\nAsk the user to request access to up__refund; do not retry it.")
			})
			t.Run("pending", func(t *testing.T) {
				s := newShop(t, fc.config+"approvals: {wait: 0s}\n")
				r := run(s)
				_, b := do(t, "GET", s.url+"/v1/approvals?status=pending", "", nil)
				id, _ := path(b, "approvals", 0, "id").(string)
				if id == "" {
					t.Fatalf("no pending approval: %v", b)
				}
				check(t, s, r, id, "after it is approved, call it again with the same arguments in request ")
			})
			t.Run("denied", func(t *testing.T) {
				s := newShop(t, fc.config)
				done := make(chan agentRun, 1)
				go func() { done <- run(s) }()
				id := pendingApproval(t, s.url, done)
				if code, b := do(t, "POST", s.url+"/v1/approvals/"+id+"/deny", `{"reason":"not this one"}`, nil); code != 200 {
					t.Fatalf("deny: %d %v", code, b)
				}
				check(t, s, <-done, "not this one", "Do not call it again with these arguments")
			})
			// A spent turns budget refuses the next model call (402, not
			// retried); a spent tool-calls budget refuses the tool calls,
			// whose refusal the model reads, and leaves the model its turns.
			t.Run("turns", func(t *testing.T) {
				s := newShopBudgets(t, fc.config, "  three: {turns: 3}\n")
				r := runAgent(t, dir, node, fc.fw, fc.mcpClient, fc.modelAPI, s.url+"/mcp", s.url+"/v1", "budget", map[string]string{link.HeaderBudget: "three"})
				if r.OK || !strings.Contains(r.Error, "turns budget") || !strings.Contains(r.Error, "finish with what you have") {
					t.Fatalf("the run: %+v, want it ended by the turns budget with the message to finish", r)
				}
				if st := s.wire.statuses(); !slices.Equal(st, []int{200, 200, 200, http.StatusPaymentRequired}) {
					t.Errorf("model calls answered %v, want three 200 and one 402 (no retry)", st)
				}
			})
			t.Run("tool_calls", func(t *testing.T) {
				s := newShopBudgets(t, fc.config, "  two: {tool_calls: 2, turns: 5}\n")
				r := runAgent(t, dir, node, fc.fw, fc.mcpClient, fc.modelAPI, s.url+"/mcp", s.url+"/v1", "budget", map[string]string{link.HeaderBudget: "two"})
				if r.OK || !strings.Contains(r.Error, "turns budget") {
					t.Fatalf("the run: %+v, want it ended by the turns budget", r)
				}
				if n := s.up.called("lookup"); n != 2 {
					t.Errorf("%d lookups ran, want 2", n)
				}
				if st := s.wire.statuses(); !slices.Equal(st, []int{200, 200, 200, 200, 200, http.StatusPaymentRequired}) {
					t.Errorf("model calls answered %v, want five 200 and one 402", st)
				}
				// Turns 3 to 5 call a third lookup each, refused; turns 4 and 5
				// read the refusal (the sixth, which would read the third, is
				// refused itself).
				if n := s.model.refusals.Load(); n != 2 {
					t.Errorf("the model read %d tool refusals for the budget, want 2", n)
				}
			})
		})
	}
}

// TestFrameworksResultText: what the model reads of a tool result that
// carries _meta (as each of reach's does). LangGraph's MCP adapter gives it
// the text block in JSON, and Mastra's MCP client (a tool without an
// outputSchema) the whole CallToolResult in JSON, reach's ids included; the
// hooks docs/frameworks/langgraph.md and mastra.md give get the model the
// text alone, and the run is the same; so does VoltAgent's client, and
// docs/frameworks/voltagent.md's hook. Genkit passes the text alone on its
// defaults.
func TestFrameworksResultText(t *testing.T) {
	dir, node := frameworksCache(t)
	const want = "page 4: orders 31-40"
	for _, c := range []struct {
		fw, wrapped string // wrapped: how the result begins without the hook ("": the text alone)
		modelAPI    string // "chat" for a framework whose default is the Responses API: the model's raw is of chat completions
	}{
		{"langgraph", `{"type":"text"`, ""},
		{"mastra", `{"_meta":`, ""},
		{"genkit", "", ""},
		{"voltagent", `{"_meta":`, "chat"},
	} {
		for _, hook := range []bool{false, true} {
			if hook && c.wrapped == "" {
				continue
			}
			s := newShop(t, "")
			env := "0"
			if hook {
				env = "1"
			}
			t.Setenv("TEXT_HOOK", env) // runAgent's node inherits it
			r := runAgent(t, dir, node, c.fw, "", c.modelAPI, s.url+"/mcp", s.url+"/v1", "legit", nil)
			if !r.OK || r.Text != "all done" {
				t.Fatalf("%s TEXT_HOOK=%s: the run: %+v", c.fw, env, r)
			}
			raw, _ := s.model.raw.Load().(string)
			switch {
			case (hook || c.wrapped == "") && raw != want:
				t.Errorf("%s TEXT_HOOK=%s: the model read %q, want %q", c.fw, env, raw, want)
			case !hook && c.wrapped != "" && (!strings.HasPrefix(raw, c.wrapped) || !strings.Contains(raw, "reach/request")):
				t.Errorf("%s: without the hook the model read %q: the client no longer wraps the text (update docs/frameworks/%s.md)", c.fw, raw, c.fw)
			}
			t.Logf("%s TEXT_HOOK=%s: the model read %d bytes for a result of %d: %s", c.fw, env, len(raw), len(want), clip(raw, 300))
		}
	}
}

// TestWarnsOfAWaitPastClientTimeouts: reach validate warns when
// approvals.wait holds a call as long as the MCP TypeScript SDK's default
// request timeout (60 s), after which Mastra and Genkit, on their
// defaults, end a held call as "Request timed out" (measured: Mastra's
// model read that instead of the approval's id; Genkit's run ended), and
// not when it is shorter.
func TestWarnsOfAWaitPastClientTimeouts(t *testing.T) {
	for wait, warn := range map[string]bool{"59s": false, "60s": true, "5m": true, "": false} {
		extra := ""
		if wait != "" {
			extra = "approvals: {wait: " + wait + "}\n"
		}
		cfg, err := config.Parse([]byte("examples: true\n"+extra), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		w := strings.Join(newTestGateway(t, cfg).Warnings(), "\n")
		if got := strings.Contains(w, "approvals.wait is"); got != warn {
			t.Errorf("wait %q: warned %v, want %v: %s", wait, got, warn, w)
		}
		if warn && !strings.Contains(w, "give up on a call after 1m0s") {
			t.Errorf("wait %q: the warning does not say the clients' timeout: %s", wait, w)
		}
	}
}
