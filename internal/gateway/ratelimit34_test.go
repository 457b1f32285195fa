package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestServedPriorities (R8): rate_limit.priorities gives a principal's
// requests its priority, which may take the capacity the buckets keep
// for priority requests (reserved): alice (priority 0) is refused once
// only the reserve is left, and cannot raise her priority with
// Reach-Priority; bob (priority 1) lowering his to 0 is refused as she
// is, and at his own priority takes the reserve, then is refused by the
// empty bucket. A Reach-Priority that is not a whole number is refused.
func TestServedPriorities(t *testing.T) {
	_, url, _, keys := authGateway(t, "rate_limit: {per_second: 0.001, burst: 4, reserved: 0.5, priorities: {bob: 1}}\n")
	call := func(who, priority string) (int, string, string) {
		t.Helper()
		h := map[string]string{"Authorization": "Bearer " + keys[who]}
		if priority != "" {
			h["Reach-Priority"] = priority
		}
		status, out := do(t, "POST", url+"/v1/calls", `{"tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"refund"}}]}`, h)
		if status != http.StatusOK {
			return status, fmt.Sprint(path(out, "error", "code")), ""
		}
		return status, fmt.Sprint(path(out, "results", 0, "error", "code")), fmt.Sprint(path(out, "results", 0, "error", "message"))
	}
	const reserved = "global (capacity reserved for priority requests)"
	for i, c := range []struct {
		who, priority, code, says string
	}{
		{"alice", "", "<nil>", ""},
		{"alice", "", "<nil>", ""},
		{"alice", "", "rate_limited", reserved},
		{"alice", "5", "rate_limited", reserved}, // never raised past her principal's
		{"bob", "0", "rate_limited", reserved},   // lowered: bulk work
		{"bob", "", "<nil>", ""},
		{"bob", " 1", "<nil>", ""},
		{"bob", "", "rate_limited", "Too many calls (global rate limit)."},
	} {
		status, code, msg := call(c.who, c.priority)
		if status != http.StatusOK || code != c.code || !strings.Contains(msg, c.says) {
			t.Errorf("call %d, %s with Reach-Priority %q: %d %s %q, want %s saying %q", i+1, c.who, c.priority, status, code, msg, c.code, c.says)
		}
	}
	if status, code, _ := call("bob", "urgent"); status != http.StatusBadRequest || code != "bad_priority" {
		t.Errorf("Reach-Priority: urgent = %d %s, want 400 bad_priority", status, code)
	}
}

// TestModelTurnPriorities (R8): the model's buckets (rate_limit.model)
// keep their reserve for requests of priority above 0 as the tool calls'
// do: with the local user's priority 1, turns marked Reach-Priority: 0
// are refused once only the reserve is left, before the model is asked,
// as 403 rate_limited with x-should-retry: false and Retry-After; turns
// at the principal's priority take the reserve, then are refused by the
// empty bucket. A refused turn spends none of its request's turns.
func TestModelTurnPriorities(t *testing.T) {
	var asked atomic.Int64
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c","object":"chat.completion","model":"fake","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	t.Cleanup(model.Close)
	cfg, err := config.Parse([]byte("examples: true\nmodel: {base_url: '"+model.URL+"/v1', name: fake}\n"+
		"rate_limit: {priorities: {local: 1}, model: {per_second: 0.001, burst: 4, reserved: 0.5}}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	url := serveTest(t, g).URL
	turn := func(priority string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(`{"model":"fake","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Content-Type", "application/json")
		if priority != "" {
			req.Header.Set("Reach-Priority", priority)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp, out
	}
	const reserved = "Too many model calls (global (capacity reserved for priority requests) rate limit)"
	var refusedIn string
	for i, c := range []struct {
		priority string
		status   int
		says     string
	}{
		{"0", 200, ""}, {"0", 200, ""}, {"0", 403, reserved},
		{"", 200, ""}, {"", 200, ""}, {"", 403, "Too many model calls (global rate limit)"},
	} {
		resp, out := turn(c.priority)
		msg := fmt.Sprint(path(out, "error", "message"))
		if resp.StatusCode != c.status || !strings.Contains(msg, c.says) {
			t.Errorf("turn %d with Reach-Priority %q: %d %q, want %d saying %q", i+1, c.priority, resp.StatusCode, msg, c.status, c.says)
		}
		if c.status == 403 {
			if code := path(out, "error", "code"); code != "rate_limited" || resp.Header.Get("X-Should-Retry") != "false" || resp.Header.Get("Retry-After") == "" || !strings.Contains(msg, "Try again in ") {
				t.Errorf("turn %d refused with code %v, x-should-retry %q, Retry-After %q, text %q; want rate_limited, false, seconds, when to try again",
					i+1, code, resp.Header.Get("X-Should-Retry"), resp.Header.Get("Retry-After"), msg)
			}
			refusedIn = resp.Header.Get("Reach-Request")
		}
	}
	if n := asked.Load(); n != 4 {
		t.Errorf("the model was asked %d times, want 4 (the refused turns never reach it)", n)
	}
	if r, ok := g.rt.Lookup(refusedIn); !ok || r.Usage().Turns != 0 {
		t.Errorf("the refused turn's request %q: %v; want it to have spent no turn", refusedIn, r)
	}
}
