package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestClose32NothingBeginsAfterTheEnds: a call that begins while the
// gateway closes, after it ended its requests and before it drains (here:
// a tool's handler that calls the gateway again once its own call is
// cancelled, while something Close waits for holds it there), is refused
// shutting_down, nothing run, and no request is left running. Before, the
// runtime still admitted it: the call began a request nothing ended, and
// ran while the store was about to close.
func TestClose32NothingBeginsAfterTheEnds(t *testing.T) {
	g := newTestGateway(t, nil)
	srv := serveTest(t, g)
	entered := make(chan struct{})
	followed := make(chan string, 1)
	g.Runtime().MustRegister(reach.Tool{Name: "hold32", Access: reach.Read,
		Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			close(entered)
			<-ctx.Done() // the request ended by Close
			resp, err := http.Post(srv.URL+"/v1/calls", "application/json",
				strings.NewReader(`{"tool_calls":[{"call_id":"c2","tool":"get_order","arguments":{"order_id":"A-1"}}]}`))
			if err != nil {
				followed <- err.Error()
				return nil, err
			}
			var out map[string]any
			json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			followed <- fmt.Sprint(resp.StatusCode, " ", out)
			return nil, ctx.Err()
		}})
	go func() {
		resp, err := http.Post(srv.URL+"/v1/calls", "application/json",
			strings.NewReader(`{"request_id":"r-close32","tool_calls":[{"call_id":"c1","tool":"hold32","arguments":{}}]}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	// Close waits for what runs in the background (Go) after it ended
	// the requests and before it drains: held until the follow-up call
	// is answered, which is then made in that window.
	var answer string
	g.Go(func() { answer = <-followed })
	if err := g.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !strings.Contains(answer, "shutting_down") || strings.Contains(answer, "A-1") && strings.Contains(answer, "success") {
		t.Errorf("a call begun after the gateway ended its requests: %s; want refused shutting_down, nothing run", answer)
	}
	for _, r := range g.Runtime().Requests() {
		if r.State() == reach.RequestRunning {
			t.Errorf("request %s is running after Close", r.ID())
		}
	}
}
