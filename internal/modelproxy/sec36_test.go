package modelproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// TestSec36ModelHugeMaxTokensStillChecked (model.context_limits): a turn
// whose answer it asks for is as large as a number can be (max_tokens, or
// max_completion_tokens beside a small max_tokens, which a provider may
// read in its place, or a number a lenient server reads: 1e9, "5000") is refused for the window as any turn past it is:
// the model is not asked. Before, the prompt and the answer asked for,
// added, wrapped around to a negative sum that fitted, the smaller of
// the two limits was checked, and a number not written as an integer was
// none: the turn was sent.
func TestSec36ModelHugeMaxTokensStillChecked(t *testing.T) {
	up, asked := countingModel(t, okCompletion)
	rt := reach.New(&reach.Options{})
	p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "small", ContextLimits: map[string]int64{"small": 1000}},
		Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
	srv := httptest.NewServer(p)
	defer srv.Close()
	for _, extra := range []string{
		`"max_tokens":9223372036854775807`,
		`"max_tokens":9223372036854775000,"n":1`,
		`"max_completion_tokens":9223372036854775807`,
		`"max_tokens":10,"max_completion_tokens":5000`,
		`"max_tokens":4611686018427387904,"n":4`,
		`"max_tokens":1e9`,
		`"max_tokens":"5000"`,
	} {
		body := `{"model":"small","messages":[{"role":"user","content":"hello"}],` + extra + `}`
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !bytes.Contains(b, []byte("context_length_exceeded")) {
			t.Errorf("a turn asking %s: %d %s, want 403 context_length_exceeded", extra, resp.StatusCode, b)
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the model was asked %d times, want 0", n)
	}
}

// lockedBuffer is a log's output, written from the proxy's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestSec36ModelListErrorLogsNoQueryKey: a model endpoint whose base URL
// carries its key in the query (model.base_url ...?api-key=...), which
// does not answer GET models, is logged without that query, as a turn's
// error is. Before, the transport's error was logged as it was, the URL
// and its key in it.
func TestSec36ModelListErrorLogsNoQueryKey(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	base := gone.URL + "/v1?api-key=sk-query-secret-36"
	gone.Close() // nothing listens there any more
	var logs lockedBuffer
	rt := reach.New(&reach.Options{})
	p := New(&Options{Model: &config.ModelConfig{BaseURL: base, Name: "m"},
		Choices: &link.ModelChoices{}, Models: rt, Breakers: rt, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
	srv := httptest.NewServer(p)
	defer srv.Close()
	for _, path := range []string{"/v1/models", "/v1/chat/completions"} {
		var resp *http.Response
		var err error
		if path == "/v1/models" {
			resp, err = http.Get(srv.URL + path)
		} else {
			b, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
			resp, err = http.Post(srv.URL+path, "application/json", bytes.NewReader(b))
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(b), "sk-query-secret-36") {
			t.Errorf("%s: %d %s, want 502 without the key", path, resp.StatusCode, b)
		}
	}
	if strings.Contains(logs.String(), "sk-query-secret-36") {
		t.Errorf("the log holds the key of the endpoint's query:\n%s", logs.String())
	}
}

// TestSec36ModelClientHeadersNotForwarded: of a client's headers, only
// its Authorization reaches the model's endpoint, and only when reach has
// no key of its own for it and authenticates nobody: another account's
// headers (OpenAI-Organization, OpenAI-Project, Azure's api-key), cookies,
// forwarding headers, a traceparent (reach sends its own turn's) and
// reach's link headers stay with reach; with a key of reach's the
// client's Authorization does not go either.
func TestSec36ModelClientHeadersNotForwarded(t *testing.T) {
	var got http.Header
	var mu sync.Mutex
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, okCompletion)
	}))
	defer up.Close()
	client := map[string]string{
		"OpenAI-Organization": "org-victim", "OpenAI-Project": "proj-victim", "Api-Key": "azure-client-key",
		"Cookie": "session=abc", "X-Forwarded-For": "10.0.0.1", "Forwarded": "for=10.0.0.1", "X-Api-Key": "x-client-key",
		"Traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "Reach-Request": "req-h", "Anthropic-Version": "2023-06-01",
	}
	for _, key := range []string{"", "sk-reach"} {
		rt := reach.New(&reach.Options{})
		p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m", APIKey: config.Secret(key)},
			Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
			Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
		srv := httptest.NewServer(p)
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-client")
		for k, v := range client {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the turn (reach's key %q): %d", key, resp.StatusCode)
		}
		mu.Lock()
		h := got
		mu.Unlock()
		for k, v := range client {
			if slicesContain(h.Values(k), v) {
				t.Errorf("reach's key %q: the client's %s: %q reached the model's endpoint", key, k, v)
			}
		}
		want := "Bearer sk-client"
		if key != "" {
			want = "Bearer " + key
		}
		if a := h.Get("Authorization"); a != want {
			t.Errorf("reach's key %q: the endpoint was sent Authorization %q, want %q", key, a, want)
		}
	}
}

func slicesContain(vs []string, v string) bool {
	for _, x := range vs {
		if strings.Contains(x, v) {
			return true
		}
	}
	return false
}

// TestSec36ModelImagePartsEstimated (model.context_limits; the token
// budget's estimate): an image a turn's content parts name by a short URL
// counts as an image does to the model (about 765 tokens; 85 at detail
// low), not as the few bytes of its URL: ten of them do not fit a window
// of 2,000 tokens, in chat completions (image_url) and in the Responses
// API (input_image), and the model is not asked; one at detail low does.
// Before, each counted a dozen tokens, and a turn of images far past a
// window or a budget was taken for a small one.
func TestSec36ModelImagePartsEstimated(t *testing.T) {
	up, asked := countingModel(t, okCompletion)
	rt := reach.New(&reach.Options{})
	p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "small", ContextLimits: map[string]int64{"small": 2000}},
		Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
	srv := httptest.NewServer(p)
	defer srv.Close()
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var chatParts, respParts []string
	for i := range 10 {
		chatParts = append(chatParts, `{"type":"image_url","image_url":{"url":"https://img.example/`+string(rune('a'+i))+`.png"}}`)
		respParts = append(respParts, `{"type":"input_image","image_url":"https://img.example/`+string(rune('a'+i))+`.png","detail":"high"}`)
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"small","messages":[{"role":"user","content":[{"type":"text","text":"compare"},` + strings.Join(chatParts, ",") + `]}]}`},
		{"/v1/responses", `{"model":"small","input":[{"role":"user","content":[{"type":"input_text","text":"compare"},` + strings.Join(respParts, ",") + `]}]}`},
	} {
		if code, b := post(c.path, c.body); code != http.StatusForbidden || !strings.Contains(b, "context_length_exceeded") {
			t.Errorf("%s, ten images: %d %s, want 403 context_length_exceeded", c.path, code, b)
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the model was asked %d times, want 0", n)
	}
	one := `{"model":"small","messages":[{"role":"user","content":[{"type":"text","text":"what is it"},{"type":"image_url","image_url":{"url":"https://img.example/a.png","detail":"low"}}]}]}`
	if code, b := post("/v1/chat/completions", one); code != http.StatusOK {
		t.Errorf("one image at detail low: %d %s, want the model's answer", code, b)
	}
}

// TestSec36ModelImagePartsHeldByTheBudget: a request whose token budget
// (2,000) is less than ten images count is refused the turn before it is
// sent (the prompt alone past what is left), the model not asked. Before,
// the images counted a dozen tokens each: the turn was sent, and spent
// past the budget.
func TestSec36ModelImagePartsHeldByTheBudget(t *testing.T) {
	up, asked := countingModel(t, okCompletion)
	srv, _ := newBudgetProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Post(up.URL+r.URL.Path, "application/json", r.Body)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, resp.Body)
	}), &reach.Budget{Tokens: 2000}, 0)
	var parts []string
	for i := range 10 {
		parts = append(parts, `{"type":"image_url","image_url":{"url":"https://img.example/`+string(rune('a'+i))+`.png"}}`)
	}
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"compare"},`+strings.Join(parts, ",")+`]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK || !strings.Contains(string(b), "budget") {
		t.Errorf("ten images under a budget of 2,000 tokens: %d %s, want the budget's refusal", resp.StatusCode, b)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the model was asked %d times, want 0", n)
	}
}
