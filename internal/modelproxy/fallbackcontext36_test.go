package modelproxy

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// TestFallbackContextLimit36 (model.context_limits, model.fallbacks): a
// turn that fits the model's window but not a fallback's is not sent to
// that fallback when the model fails: it goes to the next fallback whose
// window holds it, the turn's audit (its model frame's why) naming the
// one passed over; when no fallback holds it, the client gets the same
// 403 context_length_exceeded (x-should-retry: false) the model's own
// window gets, saying what to do, and the small fallback is never asked.
// A short turn still goes to the small fallback. Before, the turn was sent
// to the fallback, whose own 400 (or truncation) came back.
func TestFallbackContextLimit36(t *testing.T) {
	overloaded := `{"error":{"message":"overloaded","type":"server_error"}}`
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(okCompletion))
	})
	primary := &endpointAt{status: 503, body: overloaded}
	primary.down.Store(true)
	small := &endpointAt{fake: ok, status: 400, body: `{"error":{"message":"This model's maximum context length is 1000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`}
	small.down.Store(true) // it answers a long turn its own 400; a short one is never sent long
	big := &endpointAt{fake: ok, status: 503, body: overloaded}
	big.down.Store(true)
	proxy := func(fallbacks ...string) (*httptest.Server, *reach.Runtime) {
		t.Helper()
		ends := map[string]*endpointAt{"tiny": small, "wide": big}
		url := func(h http.Handler) string {
			s := httptest.NewServer(h)
			t.Cleanup(s.Close)
			return s.URL + "/v1"
		}
		mc := &config.ModelConfig{BaseURL: url(primary), Name: "gpt-test", APIKey: config.Secret("sk-primary"),
			ContextLimits: map[string]int64{"gpt-test": 100000, "tiny": 1000, "wide": 100000}}
		for _, f := range fallbacks {
			mc.Fallbacks = append(mc.Fallbacks, config.ModelFallback{BaseURL: url(ends[f]), Model: f, APIKey: config.Secret("sk-" + f)})
		}
		rt := reach.New(nil)
		p := New(&Options{Model: mc, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
			Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
		srv := httptest.NewServer(p)
		t.Cleanup(srv.Close)
		return srv, rt
	}
	turn := func(srv *httptest.Server, content, request string, extra ...map[string]any) (*http.Response, string) {
		t.Helper()
		body := map[string]any{"model": "gpt-test", "messages": []any{map[string]any{"role": "user", "content": content}}}
		for _, e := range extra {
			maps.Copy(body, e)
		}
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(string(b)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(link.HeaderRequest, request)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp, string(out)
	}
	long := strings.Repeat("the quarterly figures again ", 400) // ~2,800 tokens: past tiny's 1000

	// No fallback holds it: the model's 503, tiny passed over.
	srv, rt := proxy("tiny")
	resp, b := turn(srv, long, "req-none")
	var out struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(b), &out)
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Should-Retry") != "false" || out.Error.Code != "context_length_exceeded" {
		t.Fatalf("a long turn, the model and the wide fallback down: %d (x-should-retry %q) %s, want 403 context_length_exceeded not to be retried",
			resp.StatusCode, resp.Header.Get("X-Should-Retry"), b)
	}
	for _, w := range []string{"gpt-test", "tiny", "1000", "context window", "Shorten the conversation's history"} {
		if !strings.Contains(out.Error.Message, w) {
			t.Errorf("the refusal %q does not say %q", out.Error.Message, w)
		}
	}
	if n := small.asked.Load(); n != 0 {
		t.Errorf("the small fallback was asked %d times, want 0 (its window is too small)", n)
	}
	var frame *reach.Frame
	for _, f := range requestNamed(t, rt, "req-none").Frames() {
		if f.Kind == reach.ModelFrame {
			frame = f
		}
	}
	if frame == nil || frame.Err() == nil || frame.Err().Code != "context_length_exceeded" || !strings.Contains(frame.Why(), "tiny") {
		t.Errorf("req-none's model frame: %+v, want it ended context_length_exceeded, its why naming the fallback passed over", frame)
	}

	// A fallback that holds it, down: its error, as before (the turn fits
	// it: a retry may find it up), the audit naming the one passed over.
	srv, rt = proxy("tiny", "wide")
	resp, b = turn(srv, long, "req-down")
	if resp.StatusCode != http.StatusServiceUnavailable || big.asked.Load() != 1 {
		t.Errorf("a long turn, the model and the wide fallback down: %d %s (wide asked %d times), want the wide fallback's 503, it asked once",
			resp.StatusCode, b, big.asked.Load())
	}
	for _, f := range requestNamed(t, rt, "req-down").Frames() {
		if f.Kind == reach.ModelFrame && !strings.Contains(f.Why(), "tiny") {
			t.Errorf("req-down's model frame's why %q does not name the fallback passed over", f.Why())
		}
	}

	// The wide fallback up: it answers, tiny passed over, and the audit says so.
	big.down.Store(false)
	resp, b = turn(srv, long, "req-wide")
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get(HeaderFallback), "wide") {
		t.Fatalf("a long turn, the wide fallback up: %d %s (fallback %q), want the wide fallback's answer", resp.StatusCode, b, resp.Header.Get(HeaderFallback))
	}
	if n := small.asked.Load(); n != 0 {
		t.Errorf("the small fallback was asked %d times, want 0", n)
	}
	for _, f := range requestNamed(t, rt, "req-wide").Frames() {
		if f.Kind == reach.ModelFrame && !strings.Contains(f.Why(), "tiny") {
			t.Errorf("req-wide's model frame's why %q does not name the fallback passed over", f.Why())
		}
	}

	// A short turn fits tiny: sent there first.
	small.down.Store(false)
	if resp, b = turn(srv, "hello", "req-short"); resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get(HeaderFallback), "tiny") {
		t.Errorf("a short turn: %d %s (fallback %q), want the tiny fallback's answer", resp.StatusCode, b, resp.Header.Get(HeaderFallback))
	}

	// A short turn asking for a long answer, its max_tokens written as a
	// string (read as a lenient server reads it): tiny passed over, the
	// why giving the tokens counted, the answer's 5000 among them.
	resp, b = turn(srv, "hello", "req-asks", map[string]any{"max_tokens": "5000"})
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get(HeaderFallback), "wide") {
		t.Errorf("a short turn asking for 5000 tokens: %d %s (fallback %q), want the wide fallback's answer", resp.StatusCode, b, resp.Header.Get(HeaderFallback))
	}
	for _, f := range requestNamed(t, rt, "req-asks").Frames() {
		if f.Kind == reach.ModelFrame && !regexp.MustCompile(`does not hold this turn of about 50\d\d\)`).MatchString(f.Why()) {
			t.Errorf("req-asks' model frame's why %q does not give the tokens counted (about 50xx: the prompt and the 5000 asked)", f.Why())
		}
	}
}
