package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestIdem23OwnKeyCutOffNotRunAgain: a write under the client's own
// idempotency key whose client hangs up while the tool runs, the gateway
// staying up, may have taken effect: its key is recorded interrupted, and
// each retry of the key, through the same instance or another sharing
// PostgreSQL, is answered so; the write runs once. Before, the key was
// let go as for a failure and the retry ran the write again.
func TestIdem23OwnKeyCutOffNotRunAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleet(t)
	cutOffOnA(t, f, "idem23", "fig", "k-fig")
	for i, to := range []int{1, 0, 1} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		answer := make(chan map[string]any, 1)
		go func() {
			body := fmt.Sprintf(`{"request_id":"idem23r%d","tool_calls":[{"call_id":"c1","tool":"up__hold","arguments":{"key":"fig"},"idempotency_key":"k-fig"}]}`, i)
			req, _ := http.NewRequestWithContext(ctx, "POST", f.base(to)+"/v1/calls", strings.NewReader(body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answer <- map[string]any{"transport": err.Error()}
				return
			}
			defer resp.Body.Close()
			var out struct{ Results []map[string]any }
			json.NewDecoder(resp.Body).Decode(&out)
			if len(out.Results) == 0 {
				answer <- map[string]any{"status": resp.Status}
				return
			}
			answer <- out.Results[0]
		}()
		select {
		case <-f.up.started:
			cancel()
			t.Fatalf("retry %d of the key through %s ran the write again", i, f.names[to])
		case r := <-answer:
			cancel()
			if r["status"] == "success" || errCode(r) != "interrupted" {
				t.Fatalf("retry %d of the key through %s: %v; want the error interrupted", i, f.names[to], r)
			}
			if e, _ := r["error"].(map[string]any); !strings.Contains(fmt.Sprint(e["suggestion"]), "new idempotency key") {
				t.Errorf("retry %d: %v; want it told to send a new key", i, e)
			}
		}
	}
	if n := f.up.count("hold fig"); n != 1 {
		t.Errorf("the write of the key ran %d times; want once", n)
	}
}
