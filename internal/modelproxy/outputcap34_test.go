package modelproxy

import (
	"context"
	"encoding/json"
	"fmt"
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

// limitModel is a model that, as OpenAI's do, refuses a cap above its
// output limit (400 "max_tokens is too large"), and otherwise writes
// spend tokens, or its cap when that is less. It keeps the caps it was
// sent ("" when none).
type limitModel struct {
	limit, spend int64
	mu           sync.Mutex
	caps         []string
}

func (m *limitModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	json.NewDecoder(r.Body).Decode(&body)
	var capped int64
	var sent string
	for _, k := range []string{"max_completion_tokens", "max_tokens", "max_output_tokens"} {
		if raw, ok := body[k]; ok {
			json.Unmarshal(raw, &capped)
			sent = k + "=" + string(raw)
		}
	}
	m.mu.Lock()
	m.caps = append(m.caps, sent)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if capped > m.limit {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"max_tokens is too large: %d. This model supports at most %d completion tokens, whereas you provided %d.","type":"invalid_request_error","param":"max_tokens","code":"invalid_value"}}`, capped, m.limit, capped)
		return
	}
	out := min(m.spend, m.limit)
	if capped > 0 {
		out = min(out, capped)
	}
	fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":%d,"total_tokens":%d}}`, out, out+10)
}

// TestNoCapAProviderRejects: under a token budget, a turn that sets no
// max_tokens is sent a cap only when what is left is less than the model
// could write anyway: its output limit (model.output_limits), or, for a
// model of unknown limit, 4096 tokens, which every chat model takes.
// Before, it was sent the whole remainder (199,983 under the README's
// tokens: 200000), which OpenAI refuses above a model's output limit: every
// such turn failed. With no cap sent, the turn is charged what its answer
// used, and a request whose budget that spends is stopped.
func TestNoCapAProviderRejects(t *testing.T) {
	for _, c := range []struct {
		name          string
		budget        int64
		limits        map[string]int64
		modelLimit    int64
		spend         int64
		wantCap       string // the cap sent, "" none, or a prefix
		wantSecond402 bool   // the next turn refused: the budget spent
	}{
		{"the README's budget, a model of unknown limit", 200000, nil, 16384, 500, "", false},
		{"the README's budget, the model's limit known", 200000, map[string]int64{"m": 16384}, 16384, 500, "", false},
		{"less left than the model's limit", 10000, map[string]int64{"m": 16384}, 16384, 500, "max_completion_tokens=99", false},
		{"less left than any model writes", 3000, nil, 4096, 500, "max_completion_tokens=29", false},
		{"no cap sent, the answer spends the budget", 10000, nil, 16384, 12000, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &limitModel{limit: c.modelLimit, spend: c.spend}
			up := httptest.NewServer(m)
			defer up.Close()
			rt := reach.New(nil)
			p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m", OutputLimits: c.limits}, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
				Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{Default: &reach.Budget{Tokens: c.budget}})})
			srv := httptest.NewServer(p)
			defer srv.Close()
			turn := func() int {
				req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"go"}]}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(link.HeaderRequest, "req-cap")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if st := turn(); st != http.StatusOK {
				t.Fatalf("the turn answered %d, caps sent %q", st, m.caps)
			}
			if got := m.caps[0]; c.wantCap == "" && got != "" || c.wantCap != "" && !strings.HasPrefix(got, c.wantCap) {
				t.Errorf("cap sent %q, want %q", got, c.wantCap)
			}
			if st := turn(); (st == http.StatusPaymentRequired) != c.wantSecond402 {
				t.Errorf("the second turn answered %d (spent %d of %d)", st, spentBy(rt, "req-cap"), c.budget)
			}
		})
	}
}

// TestListedOutputLimitHoldsNoMore: a turn with no max_tokens whose
// model's output limit is listed (model.output_limits) holds its prompt
// and that limit, not all that is left: two such turns of one request,
// under a budget that has room for both, run at once.
// A model whose limit is not listed may write more: its turn holds all
// that is left, and the second waits for it.
func TestListedOutputLimitHoldsNoMore(t *testing.T) {
	for _, c := range []struct {
		name   string
		limits map[string]int64
		peak   int
	}{
		{"listed", map[string]int64{"m": 16384}, 2},
		{"not listed", nil, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			second := make(chan struct{})
			var once sync.Once
			m := &capModel{spend: 100, gate: func(arrived int, r *http.Request) {
				if arrived >= 2 {
					once.Do(func() { close(second) })
					return
				}
				select { // the first waits for a second turn, or a while
				case <-second:
				case <-time.After(time.Second):
				}
			}}
			up := httptest.NewServer(m)
			defer up.Close()
			rt := reach.New(nil)
			p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m", OutputLimits: c.limits}, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
				Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{Default: &reach.Budget{Tokens: 100000}})})
			srv := httptest.NewServer(p)
			defer srv.Close()
			statuses, _ := turnsAtOnce(t, srv.URL, "req-held", `{"model":"m","messages":[{"role":"user","content":"go"}]}`, 2)
			for _, st := range statuses {
				if st != http.StatusOK {
					t.Fatalf("statuses %v", statuses)
				}
			}
			if got := m.peakCalls(); got != c.peak {
				t.Errorf("the model had %d calls at once, want %d", got, c.peak)
			}
		})
	}
}
