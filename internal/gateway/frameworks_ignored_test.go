package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestFrameworksIgnoredRefusals runs each framework on its defaults
// through reach with a model that ignores reach's refusals: it calls the
// same lookup whatever it is told. The loop guard refuses the third and
// every later one; the eighth refusal in a row stops the request
// (refused_in_a_row), and the model turn after it is refused with the
// stop's text, once: the run ends there, 2 lookups run and 8 refused.
// With the rule off (refused_in_a_row: 0) reach refuses each call and the
// run goes on to the default budget's 30 turns, or with turns unlimited to
// the framework's step limit (50).
func TestFrameworksIgnoredRefusals(t *testing.T) {
	dir, node := frameworksCache(t)
	const stopText = "refused 8 times in a row"
	for _, fc := range frameworkCases {
		if fc.noBaseline && fc.fw != "llamaindex" && fc.fw != "strands" && fc.fw != "ax" { // each framework once, on its defaults
			continue
		}
		name := fc.fw + "/" + fc.protocol
		t.Run(name, func(t *testing.T) {
			s := newShop(t, fc.config)
			r := runAgent(t, dir, node, fc.fw, fc.mcpClient, fc.modelAPI, s.url+"/mcp", s.url+"/v1", "ignore", nil)
			text := r.Error + r.Text
			if fc.fw == "llamaindex" {
				text = strings.ReplaceAll(text, `\n`, "\n")
			}
			if !strings.Contains(text, stopText) {
				t.Errorf("the run: %+v, want it ended with reach's stop (%q)", r, stopText)
			}
			if n := s.up.called("lookup"); n != 2 {
				t.Errorf("%d lookups ran, want 2", n)
			}
			refused, stopped := 0, 0
			for _, q := range s.g.rt.Requests() {
				for _, f := range q.Frames() {
					if f.Kind != reach.ToolFrame {
						continue
					}
					if e := f.Err(); f.State() == reach.Refused && e != nil && e.Type == reach.TypeLoop {
						refused++
					} else if e != nil && e.Type == reach.TypeStopped {
						stopped++
					}
				}
				if c := q.StopCause(); c != nil && !strings.Contains(c.Reason, stopText) {
					t.Errorf("request %s stopped: %+v", q.ID(), c)
				}
			}
			if refused != 8 {
				t.Errorf("%d calls refused by the loop guard, want 8 (the eighth stops the request)", refused)
			}
			st := s.wire.statuses()
			if len(st) == 0 || st[len(st)-1] == http.StatusOK || len(st) > 11 {
				t.Errorf("model calls answered %v, want at most 11, the last refused", st)
			}
			for _, c := range st[:max(len(st)-1, 0)] {
				if c != http.StatusOK {
					t.Errorf("model calls answered %v, want one refused at the end (no retry)", st)
					break
				}
			}
			t.Logf("ignored refusals through reach: %d model calls (%v), %d tool calls after the stop; the run ended: %s",
				len(st), st, stopped, clip(text, 300))
			if t.Failed() {
				// Which request each model turn and tool call ran in: a run
				// whose turns and calls went to different requests (one
				// stopped, the other not) shows here.
				for _, q := range s.g.rt.Requests() {
					turns, calls := 0, 0
					for _, f := range q.Frames() {
						switch f.Kind {
						case reach.ModelFrame:
							turns++
						case reach.ToolFrame:
							calls++
						}
					}
					t.Logf("request %s (%s): %d model turns, %d tool calls, stop %+v", q.ID(), q.State(), turns, calls, q.StopCause())
				}
			}
			if fc.noBaseline {
				return
			}
			// The same run with the rule off and no turns budget: reach
			// refuses each call, and only the framework's step limit (50)
			// ends the run.
			off := newShopBudgets(t, fc.config+"refused_in_a_row: 0\n", "  default: {turns: 0}\n")
			o := runAgent(t, dir, node, fc.fw, fc.mcpClient, fc.modelAPI, off.url+"/mcp", off.url+"/v1", "ignore", nil)
			t.Logf("ignored refusals with refused_in_a_row: 0: %d model turns, %d lookups ran (%s)", off.model.turns.Load(), off.up.called("lookup"),
				clip(o.Error+o.Text, 120))
			if n := off.model.turns.Load(); n <= 3*int64(len(st)) {
				t.Errorf("with the rule off the run took %d model turns, with it %d: want it far longer without", n, len(st))
			}
		})
	}
}
