package gateway

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// TestFrameworksHandoff: OpenAI Agents' other way to delegate, a hand-off
// (Agent handoffs, the model's transfer_to_researcher), on its defaults:
// the manager's turn hands the run itself to the researcher, which goes on
// with the whole conversation and the shop's tools, and whose answer is the
// run's. Reach sees one conversation that changes agent: the run is one
// request, each tool call under the turn that chose it; the researcher
// spends the run's budget, and the spent budget ends the run with one
// refused model call, not retried; a stop of the request stops the
// researcher's tool call in flight and every model call after it.
func TestFrameworksHandoff(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "openai")
	src, err := os.ReadFile("testdata/frameworks/subagent.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "reach-subagent", src)
	const fw = "openai-agents-handoff"

	t.Run("tree", func(t *testing.T) {
		s := newShop(t, "")
		r := runSubagent(t, dir, node, script, fw, s, "delegate legit")
		if !r.OK || r.Text != "all done" || r.Agent != "researcher" {
			t.Fatalf("the run: %+v, want the researcher's answer", r)
		}
		if s.up.called("job_status") != 5 || s.up.called("list_page") != 4 {
			t.Errorf("upstream calls: %d polls, %d pages; want 5 and 4", s.up.called("job_status"), s.up.called("list_page"))
		}
		// The manager's turn that handed off and the researcher's ten;
		// the hand-off is the framework's, not a call through reach.
		checkOneGraph(t, s.g, 11, 9)
		root := oneRoot(t, s.g)
		if used, reported := root.Usage().Tokens, s.model.tokens.Load(); used < reported {
			t.Errorf("request %s was charged %d tokens, the model reported %d: want every turn's, the researcher's too", root.ID(), used, reported)
		}
		for _, c := range s.wire.statuses() {
			if c != http.StatusOK {
				t.Errorf("model calls answered %v, want all 200", s.wire.statuses())
				break
			}
		}
	})

	t.Run("budget", func(t *testing.T) {
		s := newShopBudgets(t, "", "  default: {tokens: 3000}\n")
		r := runSubagent(t, dir, node, script, fw, s, "delegate budget")
		if r.OK || !strings.Contains(r.Error, "finish with what you have") {
			t.Fatalf("the run: %+v, want it ended by the budget with the message to finish", r)
		}
		st := s.wire.statuses()
		refused := 0
		for _, c := range st {
			if c != http.StatusOK {
				refused++
			}
		}
		if refused != 1 || st[len(st)-1] != http.StatusPaymentRequired {
			t.Errorf("model calls answered %v, want one 402 at the end (no retry)", st)
		}
		root := oneRoot(t, s.g)
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
			t.Fatalf("the run ended before the researcher's tool call began: %+v", r)
		case <-time.After(60 * time.Second):
			t.Fatal("the researcher's tool call never began")
		}
		req := requestRunning(t, s.g, "up__wait")
		if fs := req.Frames(); len(fs) == 0 || fs[0].Kind != reach.ModelFrame || fs[0].Parent != nil {
			t.Fatalf("the researcher's tool call runs in request %s, which is not the manager's", req.ID())
		}
		if code, b := do(t, "POST", s.url+"/v1/requests/"+req.ID()+"/cancel", `{"mode":"cancel","reason":"the user pressed stop"}`, nil); code != 200 {
			t.Fatalf("cancel: %d %v", code, b)
		}
		select {
		case err := <-s.up.waitDone:
			if err == nil {
				t.Errorf("the researcher's tool call was not cancelled")
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the researcher's tool call was not cancelled")
		}
		r := <-done
		st := s.wire.statuses()
		if len(st) < 2 {
			t.Fatalf("model calls answered %v (the run: %+v)", st, r)
		}
		for _, c := range st[2:] { // the manager's turn and the researcher's first came before the stop
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
}
