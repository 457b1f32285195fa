package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// TestFrameworksStreamStopped: OpenAI Agents' streamed run and the AI
// SDK's streamText, on the Responses API and on chat completions, are
// stopped while their model turn streams (its answer begun, the model
// still writing). The stream was cut with reach's error of a broken
// stream, "Send the request again", a server_error: the stop was not
// said, and a client that retries such an error would send the turn
// again. Now the run ends with reach's refusal: the request stopped, by
// whom and why, and not to retry; no turn is sent again, and the turn
// ends with the stop as its cause.
func TestFrameworksStreamStopped(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "openai", "ai", "@ai-sdk/mcp", "@ai-sdk/openai")
	for _, mode := range []string{"openai-agents", "openai-agents-chat", "ai-sdk", "ai-sdk-chat"} {
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
			case <-m.hung:
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
			if code, b := do(t, "POST", s.url+"/v1/requests/"+req.ID()+"/cancel", `{"mode":"cancel","reason":"the user pressed stop"}`, nil); code != 200 {
				t.Fatalf("cancel: %d %v", code, b)
			}
			r := <-done
			if r.OK || !strings.Contains(r.Error, "stopped (cancel) by api: the user pressed stop") || !strings.Contains(r.Error, "Do not retry this model call") {
				t.Errorf("the run after the stop: %+v\nwant it ended by the stop, saying not to retry", r)
			}
			if strings.Contains(r.Error, "Send the request again") {
				t.Errorf("the run was told to send the turn again: %s", r.Error)
			}
			if n := m.turns.Load(); n != 1 {
				t.Errorf("the model was asked %d times, want once (the stopped turn not sent again)", n)
			}
			if st := s.wire.statuses(); len(st) != 1 {
				t.Errorf("model calls answered %v, want the one stopped", st)
			}
			for deadline := time.Now().Add(20 * time.Second); turn.State() != reach.Failed && turn.State() != reach.Cancelled; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the model turn is %v after the stop", turn.State())
				}
			}
			if err := turn.Err(); err == nil || !strings.Contains(err.Error(), "the user pressed stop") {
				t.Errorf("the model turn ended with %v, want the stop as its cause", err)
			}
		})
	}
}
