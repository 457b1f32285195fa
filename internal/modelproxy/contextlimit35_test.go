package modelproxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// TestContextLimit35 (model.context_limits): a turn whose prompt
// (estimated as the token budget estimates it) does not fit the window
// listed for its model is refused before it is sent: the provider never
// sees it, the turn counts none of its request's turns, and the answer is
// a 403 context_length_exceeded no SDK retries (x-should-retry: false)
// saying what to do (shorten the history); the request's graph shows the
// refused model frame. A turn that fits passes, and so does any turn of
// a model not listed (no check: its window is not known). Before, every
// turn was sent, and the provider refused the long one itself.
func TestContextLimit35(t *testing.T) {
	up, asked := countingModel(t, okCompletion)
	rt := reach.New(&reach.Options{})
	p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "small", ContextLimits: map[string]int64{"small": 1000}},
		Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
	srv := httptest.NewServer(p)
	defer srv.Close()
	turn := func(model, content, request string) (*http.Response, map[string]any) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": content}}})
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(string(b)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(link.HeaderRequest, request)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp, out
	}
	long := strings.Repeat("the quarterly figures again ", 400) // ~11,000 bytes: ~2,800 tokens
	if resp, out := turn("small", "hello", "req-fits"); resp.StatusCode != http.StatusOK {
		t.Fatalf("a short turn: %d %v, want 200", resp.StatusCode, out)
	}
	resp, out := turn("small", long, "req-long")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("a turn past the window: %d (x-should-retry %q) %v, want 403 not to be retried", resp.StatusCode, resp.Header.Get("X-Should-Retry"), out)
	}
	msg, _ := out["error"].(map[string]any)["message"].(string)
	if code := out["error"].(map[string]any)["code"]; code != "context_length_exceeded" ||
		!strings.Contains(msg, "1000") || !strings.Contains(msg, "small") || !strings.Contains(msg, "Shorten") {
		t.Errorf("the refusal: %v, want context_length_exceeded naming the model, its window and what to do", out)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the model was asked %d times, want 1 (the short turn)", n)
	}
	r := requestNamed(t, rt, "req-long")
	if u := r.Usage(); u.Turns != 0 {
		t.Errorf("the refused turn's request counted %d turns, want 0", u.Turns)
	}
	var refused bool
	for _, f := range r.Frames() {
		if f.Kind == reach.ModelFrame && f.State() == reach.Refused && f.Err() != nil && f.Err().Code == "context_length_exceeded" {
			refused = true
		}
	}
	if !refused {
		t.Errorf("req-long's frames show no turn refused for its length")
	}
	// A model not listed: no check, sent as it is.
	if resp, out := turn("other", long, "req-other"); resp.StatusCode != http.StatusOK {
		t.Fatalf("a long turn of a model not listed: %d %v, want 200 (not checked)", resp.StatusCode, out)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("the model was asked %d times, want 2", n)
	}
}
