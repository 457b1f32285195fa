package modelproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// charCountModel answers a chat turn with usage as a byte-pair encoder
// counts its prompt: each of the prompt's characters a token (digits one
// apart, as cl100k_base and o200k_base count them: testdata/tokens37.json),
// plus 7 for the message's framing; and writes its cap, or 50 tokens.
type charCountModel struct{ calls atomic.Int64 }

func (m *charCountModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.calls.Add(1)
	var body struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
		Max int64 `json:"max_completion_tokens"`
	}
	json.NewDecoder(r.Body).Decode(&body)
	prompt := int64(7)
	for _, msg := range body.Messages {
		prompt += int64(len(msg.Content))
	}
	out := int64(50)
	if body.Max > 0 {
		out = min(out, body.Max)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, prompt, out, prompt+out)
}

// TestBudgetNotSpentByAPromptTheEstimateMissed37: a prompt of digits one
// apart (a token each: 1,999 tokens in 1,999 bytes, which four bytes a
// token counted as 500) under a budget of 1,500 tokens is refused before
// it is sent (402, the prompt alone past what is left), not sent and
// charged past the budget. Before, the turn was sent with its answer
// capped at what the estimate left (and the note to finish), and the
// request spent 2,243 tokens of 1,500.
func TestBudgetNotSpentByAPromptTheEstimateMissed37(t *testing.T) {
	m := &charCountModel{}
	up := httptest.NewServer(m)
	defer up.Close()
	const budget = 1500
	rt := reach.New(nil)
	p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m"}, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{Default: &reach.Budget{Tokens: budget}})})
	srv := httptest.NewServer(p)
	defer srv.Close()
	digits := make([]string, 1000)
	for i := range digits {
		digits[i] = fmt.Sprint(i % 10)
	}
	text, _ := json.Marshal(strings.Join(digits, " "))
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":`+string(text)+`}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(link.HeaderRequest, "req-digits")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if spent := spentBy(rt, "req-digits"); spent > budget {
		t.Fatalf("the request spent %d tokens of a budget of %d (answered %d: %s)", spent, budget, resp.StatusCode, b)
	}
	if resp.StatusCode != http.StatusPaymentRequired || !strings.Contains(string(b), "this prompt alone is about") {
		t.Errorf("answered %d %s; want 402, the prompt alone past the budget", resp.StatusCode, b)
	}
	if n := m.calls.Load(); n != 0 {
		t.Errorf("the endpoint was sent %d turns; want none", n)
	}
}

// TestBudgetCountsAFileByIDAsTheWindow37: a prompt that names a file by id
// (chat: a file part with file_id; Responses API: input_file with file_id
// or file_url), whose tokens only the endpoint knows, counts as the
// model's whole context window (model.context_limits, else 128,000): under
// a budget that cannot cover that it is refused before it is sent, 402
// with what to do (send the file's text instead); under one that can, it
// is sent. A file inlined (file_data) counts so too: its bytes do not
// bound what the model reads of it. Before,
// a file by id counted the bytes of its id: a budget of 2,000 tokens sent
// a turn whose PDF was 50,000.
func TestBudgetCountsAFileByIDAsTheWindow37(t *testing.T) {
	chatFile := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"summarize"},{"type":"file","file":{"file_id":"file-abc"}}]}]}`
	chatInline := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"summarize"},{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0xLjQK"}}]}]}`
	respFile := `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"summarize"},{"type":"input_file","file_url":"https://example.com/a.pdf"}]}]}`
	for _, c := range []struct {
		name, path, body string
		budget, window   int64
		want             int
	}{
		{"chat file_id, budget under the default window", "/v1/chat/completions", chatFile, 2000, 0, http.StatusPaymentRequired},
		{"chat file_id, budget under the listed window", "/v1/chat/completions", chatFile, 20000, 32000, http.StatusPaymentRequired},
		{"chat file_id, budget over the listed window", "/v1/chat/completions", chatFile, 40000, 32000, http.StatusOK},
		// Inlined, its bytes do not bound what the model reads of it
		// either (a PDF's text and an image of each page).
		{"chat file_data", "/v1/chat/completions", chatInline, 2000, 0, http.StatusPaymentRequired},
		// Spelled with spaces, as a client may send it.
		{"chat file_id, spaced", "/v1/chat/completions", strings.ReplaceAll(chatFile, `":`, `" : `), 2000, 0, http.StatusPaymentRequired},
		{"chat file_data, budget over the listed window", "/v1/chat/completions", chatInline, 40000, 32000, http.StatusOK},
		{"responses file_url", "/v1/responses", respFile, 2000, 0, http.StatusPaymentRequired},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int64
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.Header().Set("Content-Type", "application/json")
				if strings.HasSuffix(r.URL.Path, "/responses") {
					io.WriteString(w, `{"id":"resp_1","object":"response","status":"completed","model":"m","output":[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"ok"}]}],"usage":{"input_tokens":100,"output_tokens":5,"total_tokens":105}}`)
					return
				}
				io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105}}`)
			}))
			defer up.Close()
			var limits map[string]int64
			if c.window > 0 {
				limits = map[string]int64{"m": c.window}
			}
			rt := reach.New(nil)
			p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m", ContextLimits: limits}, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
				Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{Default: &reach.Budget{Tokens: c.budget}})})
			srv := httptest.NewServer(p)
			defer srv.Close()
			req, _ := http.NewRequest("POST", srv.URL+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Fatalf("answered %d %s; want %d", resp.StatusCode, b, c.want)
			}
			if c.want == http.StatusPaymentRequired {
				if calls.Load() != 0 {
					t.Errorf("the endpoint was sent the turn")
				}
				if !strings.Contains(string(b), "by id or URL, or inlined") || !strings.Contains(string(b), "file's text") {
					t.Errorf("the refusal %s does not say the file counted as the window, and what to do", b)
				}
			}
		})
	}
}
