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
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// choicesModel is an OpenAI-style model that answers as many choices as a
// turn asks for (n), each as long as its cap (max_completion_tokens or
// max_tokens), and counts them all in its usage, as OpenAI does.
type choicesModel struct {
	asked atomic.Int64
}

func (m *choicesModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.asked.Add(1)
	var body struct {
		N         *float64 `json:"n"`
		MaxTokens *int64   `json:"max_tokens"`
		MaxCompl  *int64   `json:"max_completion_tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":{"message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	n, each := int64(1), int64(50)
	if body.N != nil {
		n = min(int64(*body.N), 1000) // a server's own bound
	}
	for _, c := range []*int64{body.MaxTokens, body.MaxCompl} {
		if c != nil && *c < each {
			each = *c
		}
	}
	choices := make([]any, n)
	for i := range choices {
		choices[i] = map[string]any{"index": i, "finish_reason": "length",
			"message": map[string]any{"role": "assistant", "content": strings.Repeat("x", int(each))}}
	}
	json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-n", "object": "chat.completion", "model": "fake",
		"choices": choices, "usage": map[string]any{"prompt_tokens": 10, "completion_tokens": n * each, "total_tokens": 10 + n*each}})
}

// TestAttack24ChoicesNeverPassTheTokenBudget: a turn that asks for more
// choices (n) than its request has tokens left was passed on with each
// choice capped at one token, and the model's n choices together spent
// past the budget (233 of 100). It is refused before the model is asked,
// saying how many choices fit.
func TestAttack24ChoicesNeverPassTheTokenBudget(t *testing.T) {
	m := &choicesModel{}
	up := httptest.NewServer(m)
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("model:\n  base_url: "+up.URL+"/v1\n  api_key: sk-fake\n  name: fake\nexamples: true\nbudgets:\n  default: {tokens: 100}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	for _, n := range []string{`200`, `"200"`, `2e2`, `1e12`} {
		id := "choices-" + strings.NewReplacer(`"`, "q").Replace(n)
		resp, b := postChat(t, srv.URL, `{"n":`+n+`,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{link.HeaderRequest: id})
		b = b[:min(len(b), 600)]
		r, ok := g.rt.Lookup(id)
		if !ok {
			t.Fatalf("n=%s: request %s not found (%d %s)", n, id, resp.StatusCode, b)
		}
		if used := r.Usage().Tokens; used > 100 {
			t.Errorf("n=%s: the turn spent %d tokens of a 100-token budget (%d %s)", n, used, resp.StatusCode, b)
		}
		var out map[string]any
		json.Unmarshal(b, &out)
		msg := fmt.Sprint(path(out, "error", "message"))
		if resp.StatusCode != http.StatusPaymentRequired || path(out, "error", "code") != "budget_tokens" || !strings.Contains(msg, "choices") {
			t.Errorf("n=%s: answered %d %s, want 402 budget_tokens saying how many choices fit", n, resp.StatusCode, b)
		}
		// One next step: ask again with fewer choices, not "finish with
		// what you have" beside it.
		if !strings.Contains(msg, "Ask again with n at most") || strings.Contains(msg, "Do not retry") {
			t.Errorf("n=%s: %q; want it to say how many choices to ask for, and not to finish", n, msg)
		}
	}
	if got := m.asked.Load(); got != 0 {
		t.Errorf("the model was asked %d times, want 0", got)
	}
	// As many choices as fit pass, capped so that they fit together.
	resp, b := postChat(t, srv.URL, `{"n":4,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{link.HeaderRequest: "choices-4"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("n=4: %d %s", resp.StatusCode, b)
	}
	if r, _ := g.rt.Lookup("choices-4"); r.Usage().Tokens > 100 {
		t.Errorf("n=4: spent %d tokens of 100", r.Usage().Tokens)
	}
}

// TestAttack24RemoteStopReasonRedacted: a stop's reason is redacted before
// it is kept (an operator may paste a credential into it), as a stop of a
// request running on the instance asked is. Through an instance that does
// not run the request, the reason went to the shared store as it was sent:
// the stop's answer, and whoever reads the stored request, got it whole.
func TestAttack24RemoteStopReasonRedacted(t *testing.T) {
	a, b, p := twoInstances(t, "")
	done := make(chan map[string]any, 1)
	go func() { done <- callOn(t, a, "r-reason", "s", "up__slow", `{"text":"long"}`) }()
	select {
	case <-p.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow call did not start")
	}
	const secret = "hunter2xyz"
	status, out := do(t, "POST", b+"/v1/requests/r-reason/cancel", `{"mode":"cancel","reason":"rotated: password=`+secret+`"}`, nil)
	if status != 200 || out["state"] != "stopped_cancel" {
		t.Fatalf("cancel on b: %d %v", status, out)
	}
	if r := <-done; r["status"] != "cancelled" {
		t.Fatalf("the slow call: %v", r)
	}
	if reason := fmt.Sprint(path(out, "stop", "reason")); strings.Contains(reason, secret) || !strings.Contains(reason, "rotated") {
		t.Errorf("the stop's answer through b says reason %q: want it redacted", reason)
	}
	// The request's view on a, where it ran, and on b, read from the store.
	for _, base := range []string{a, b} {
		_, got := do(t, "GET", base+"/v1/requests/r-reason", "", nil)
		if b, _ := json.Marshal(got); strings.Contains(string(b), secret) {
			t.Errorf("GET /v1/requests/r-reason on %s holds the reason's secret: %s", base, b)
		}
	}
}
