package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// TestUIStopWhileStreaming: a person presses a request's stop in reach's
// UI (chromium) while its model turn streams through the model proxy to a
// real SDK (OpenAI Agents on chat completions and on the Responses API,
// the AI SDK's streamText). The SDK's run ends with reach's refusal (the
// request stopped, by whom and why, not to retry), not a hang; the page
// shows the request stopped, also read again, with no stop form left; the
// store records it stopped; and a later tool call and model call named in
// it are refused with the stop (code stopped_cancel).
func TestUIStopWhileStreaming(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "openai", "ai", "@ai-sdk/mcp", "@ai-sdk/openai")
	chromium, pw := browserDeps(t)
	script, err := filepath.Abs("testdata/stop-browser.js")
	if err != nil {
		t.Fatal(err)
	}
	const reason = "the user pressed stop in the UI"
	for _, mode := range []string{"openai-agents-chat", "openai-agents", "ai-sdk"} {
		t.Run(mode, func(t *testing.T) {
			s, m := streamShop(t)
			type result struct {
				OK    bool   `json:"ok"`
				Text  string `json:"text"`
				Error string `json:"error"`
			}
			done := make(chan result, 1)
			go func() {
				var r result
				runStream(t, dir, node, mode, &r, "MODEL_URL="+s.url+"/v1", "MCP_URL="+s.url+"/mcp", "TASK=hang")
				done <- r
			}()
			select {
			case <-m.hung: // the turn's answer begun, the model still writing
			case r := <-done:
				t.Fatalf("the run ended before its model turn streamed: %+v", r)
			case <-time.After(60 * time.Second):
				t.Fatal("the model turn did not begin")
			}
			var req *reach.Request
			var turn *reach.Frame
			for _, q := range s.g.rt.Requests() {
				for _, f := range q.Frames() {
					if f.Kind == reach.ModelFrame {
						req, turn = q.Root(), f
					}
				}
			}
			if req == nil {
				t.Fatal("no request holds the model turn")
			}
			id := req.ID()
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, script)
			cmd.Env = append(os.Environ(), "BASE="+s.url, "CHROMIUM="+chromium, "PW="+pw, "REQUEST="+id, "REASON="+reason)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("stop-browser.js: %v\n%s", err, out)
			}
			var saw struct {
				StateBefore, StateAfter, StateReloaded string
				StopForms                              int
				Error                                  string
			}
			if err := json.Unmarshal(out, &saw); err != nil {
				t.Fatalf("stop-browser.js printed %q: %v", out, err)
			}
			if saw.Error != "" {
				t.Fatalf("in the browser: %s", saw.Error)
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("the SDK's run did not end after the stop from the UI (a hung stream)")
			}
			if r.OK || !strings.Contains(r.Error, "stopped (cancel)") || !strings.Contains(r.Error, reason) || !strings.Contains(r.Error, "Do not retry this model call") {
				t.Errorf("the run after the stop from the UI: %+v\nwant it ended by the stop, saying who, why and not to retry", r)
			}
			if n := m.turns.Load(); n != 1 {
				t.Errorf("the model was asked %d times, want once (the stopped turn not sent again)", n)
			}
			if !strings.HasPrefix(saw.StateBefore, "running") || !strings.HasPrefix(saw.StateAfter, "stopped (cancel)") ||
				!strings.HasPrefix(saw.StateReloaded, "stopped (cancel)") || saw.StopForms != 0 {
				t.Errorf("the page: %+v; want running, then stopped (cancel) with no stop form left", saw)
			}
			if st := req.State(); st != "stopped_cancel" || req.StopCause().Reason != reason {
				t.Errorf("the request is %s (%+v) after the stop from the UI", st, req.StopCause())
			}
			for deadline := time.Now().Add(20 * time.Second); turn.State() != reach.Failed && turn.State() != reach.Cancelled; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the model turn is %v after the stop", turn.State())
				}
			}
			rec, err := s.g.store.GetRequest(t.Context(), id)
			if err != nil || rec.State != "stopped" {
				t.Errorf("the store's record of %s: %+v %v; want it stopped", id, rec, err)
			}
			// A later call named in it is refused: stopped.
			_, calls := do(t, "POST", s.url+"/v1/calls", `{"request_id":"`+id+`","tool_calls":[{"call_id":"l","tool":"up__lookup","arguments":{"q":"x"}}]}`, nil)
			if c, ty := path(calls, "results", 0, "error", "code"), path(calls, "results", 0, "error", "type"); c != "stopped_cancel" || ty != "stopped" {
				t.Errorf("a tool call in %s after the stop: %v; want it refused, type stopped, code stopped_cancel", id, calls)
			}
			code, chat := do(t, "POST", s.url+"/v1/chat/completions", `{"model":"scripted","messages":[{"role":"user","content":"hello"}]}`,
				map[string]string{"Reach-Request": id, "Content-Type": "application/json"})
			if c := path(chat, "error", "code"); code < 400 || c != "stopped_cancel" || !strings.Contains(fmt.Sprint(path(chat, "error", "message")), reason) {
				t.Errorf("a model call in %s after the stop: %d %v; want it refused, code stopped_cancel, with the stop's reason", id, code, chat)
			}
			if n := m.turns.Load(); n != 1 {
				t.Errorf("the model was asked %d times after the stop, want once", n)
			}
		})
	}
}
