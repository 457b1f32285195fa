package modelproxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// turnsOf is how many turns request id has used, as its meter counts
// them (what the store keeps of it on one SQLite gateway), or -1.
func turnsOf(rt *reach.Runtime, id string) int {
	for _, r := range rt.Requests() {
		if r.ID() == id {
			return r.Usage().Turns
		}
	}
	return -1
}

// sendTurn sends one chat turn of request id and returns its status and
// error code.
func sendTurn(t *testing.T, url, id, body string) (int, string) {
	t.Helper()
	s, c := turnsAtOnce(t, url, id, body, 1)
	return s[0], c[0]
}

// TestRefusedTurnCountsNoTurn34: a model turn that reach refuses before it
// is sent (its prompt alone passes the tokens left, the budget as good as
// spent, more choices than tokens) never reached the model: it spends no
// turn of the request's turns budget. Before, BeginModel counted it, and an
// agent refused so (told to finish) had also lost a turn.
func TestRefusedTurnCountsNoTurn34(t *testing.T) {
	t.Run("prompt alone too large", func(t *testing.T) {
		m := &capModel{gate: func(int, *http.Request) {}}
		srv, rt := newBudgetProxy(t, m, &reach.Budget{Turns: 5, Tokens: 1000}, 0)
		long := strings.Repeat("word ", 2000) // about 2,500 tokens
		status, code := sendTurn(t, srv.URL, "big", `{"model":"m","messages":[{"role":"user","content":"`+long+`"}]}`)
		if status != http.StatusPaymentRequired || code != "budget_tokens" {
			t.Fatalf("the turn: %d %s, want 402 budget_tokens", status, code)
		}
		if n := turnsOf(rt, "big"); n != 0 {
			t.Errorf("the request used %d turns, want 0: the refused turn never reached the model", n)
		}
		if m.all != 0 {
			t.Errorf("the model had %d calls, want none", m.all)
		}
	})

	t.Run("budget spent", func(t *testing.T) {
		// The first turn spends most of the 1,000 tokens: the second is
		// let begin (not all spent), and refused as what is left is less
		// than its prompt (about 100 tokens).
		m := &capModel{spend: 800, gate: func(int, *http.Request) {}}
		srv, rt := newBudgetProxy(t, m, &reach.Budget{Turns: 5, Tokens: 1000}, 0)
		body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("go ", 130) + `"}]}`
		if status, _ := sendTurn(t, srv.URL, "spent", body); status != 200 {
			t.Fatalf("the first turn: %d", status)
		}
		if got := spentBy(rt, "spent"); got >= 1000 || got < 900 {
			t.Fatalf("the first turn spent %d tokens, want 900 to 999 of the 1,000", got)
		}
		for range 3 {
			if status, code := sendTurn(t, srv.URL, "spent", body); status != http.StatusPaymentRequired || code != "budget_tokens" {
				t.Fatalf("a turn past the budget: %d %s, want 402 budget_tokens", status, code)
			}
		}
		if n := turnsOf(rt, "spent"); n != 1 {
			t.Errorf("the request used %d turns, want 1: the refused ones never reached the model", n)
		}
	})

	t.Run("too many choices", func(t *testing.T) {
		m := &capModel{gate: func(int, *http.Request) {}}
		srv, rt := newBudgetProxy(t, m, &reach.Budget{Turns: 5, Tokens: 1000}, 0)
		status, code := sendTurn(t, srv.URL, "n", `{"model":"m","n":5000,"messages":[{"role":"user","content":"go"}]}`)
		if status != http.StatusPaymentRequired || code != "budget_tokens" {
			t.Fatalf("the turn: %d %s, want 402 budget_tokens", status, code)
		}
		if n := turnsOf(rt, "n"); n != 0 {
			t.Errorf("the request used %d turns, want 0", n)
		}
	})
}

// TestTurnsBudgetOnlyCountsAnsweredTurns34: with a turns budget of 2,
// refused turns before the budget runs out leave both turns to the agent.
// Before, three refusals ended the request's turns with none answered.
func TestTurnsBudgetOnlyCountsAnsweredTurns34(t *testing.T) {
	m := &capModel{spend: 5, gate: func(int, *http.Request) {}}
	srv, rt := newBudgetProxy(t, m, &reach.Budget{Turns: 2, Tokens: 100000}, 0)
	for range 3 {
		if status, _ := sendTurn(t, srv.URL, "r", `{"model":"m","n":1000000,"messages":[{"role":"user","content":"go"}]}`); status != http.StatusPaymentRequired {
			t.Fatalf("a turn asking for 1,000,000 choices: %d, want 402", status)
		}
	}
	for i := range 2 {
		if status, code := sendTurn(t, srv.URL, "r", `{"model":"m","messages":[{"role":"user","content":"go"}]}`); status != 200 {
			t.Fatalf("turn %d after the refusals: %d %s, want 200", i+1, status, code)
		}
	}
	if n := turnsOf(rt, "r"); n != 2 {
		t.Errorf("the request used %d turns, want the 2 answered", n)
	}
}

// flakyModel answers 500 (or, with status, that) to its first fails
// calls, then a chat completion of 10 and 5 tokens.
type flakyModel struct {
	fails  int32
	status int
	calls  atomic.Int32
}

func (m *flakyModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	if m.calls.Add(1) <= m.fails {
		http.Error(w, `{"error":{"message":"overloaded","type":"server_error"}}`, max(m.status, 500))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
}

// TestRetriedTurnCountsOnce34: a turn the model endpoint answered with an
// error (a 500, a 429: the SDKs retry both) was no turn of the agent's:
// the client's retries of it spend one turn between them, the one
// answered. Before, each attempt spent a turn: a turns budget of 3 ran
// out on one turn retried twice.
func TestRetriedTurnCountsOnce34(t *testing.T) {
	for _, status := range []int{http.StatusInternalServerError, http.StatusTooManyRequests, http.StatusBadRequest} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			m := &flakyModel{fails: 2, status: status}
			srv, rt := newBudgetProxy(t, m, &reach.Budget{Turns: 3}, 0)
			body := `{"model":"m","messages":[{"role":"user","content":"go"}]}`
			var got []int
			for range 3 {
				s, _ := sendTurn(t, srv.URL, "retried", body)
				got = append(got, s)
			}
			if got[0] == 200 || got[1] == 200 || got[2] != 200 {
				t.Fatalf("the attempts were answered %v, want two errors, then 200", got)
			}
			if n := turnsOf(rt, "retried"); n != 1 {
				t.Errorf("the request used %d turns, want 1: the one the model answered", n)
			}
		})
	}
}

// turnLedger is a shared ledger that counts the turns it admitted and
// was given back, refusing every turn's tokens when refuse is set.
type turnLedger struct {
	mu     sync.Mutex
	turns  int
	refuse bool
}

func (l *turnLedger) AdmitTurn(_ context.Context, req *reach.Request) (int64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turns++
	return 1000, true, nil
}

func (l *turnLedger) Spend(context.Context, *reach.Request, int64, int64) error { return nil }

func (l *turnLedger) GiveBackTurn(context.Context, *reach.Request) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turns--
	return nil
}

func (l *turnLedger) admitted() int { l.mu.Lock(); defer l.mu.Unlock(); return l.turns }

// TestRefusedTurnGivenBackOnTheSharedLedger34: on several instances a
// turn the shared ledger admitted (one turn debited) and that is then
// refused before it is sent, or that the model answers with an error, is
// given back on the shared ledger too. Before, the ledger kept it: every
// instance counted the turn that never reached the model.
func TestRefusedTurnGivenBackOnTheSharedLedger34(t *testing.T) {
	for _, c := range []struct {
		name, body string
		model      http.Handler
		status     int
	}{
		{"prompt too large", `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("word ", 2000) + `"}]}`,
			&flakyModel{}, http.StatusPaymentRequired},
		{"model error", `{"model":"m","messages":[{"role":"user","content":"go"}]}`, &flakyModel{fails: 1}, http.StatusInternalServerError},
		{"answered", `{"model":"m","messages":[{"role":"user","content":"go"}]}`, &flakyModel{}, http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := httptest.NewServer(c.model)
			defer up.Close()
			ledger := &turnLedger{}
			rt := reach.New(nil)
			p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m"}, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt, Ledger: ledger,
				Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{Default: &reach.Budget{Turns: 5, Tokens: 1000}})})
			srv := httptest.NewServer(p)
			defer srv.Close()
			status, _ := sendTurn(t, srv.URL, "shared", c.body)
			if status != c.status {
				t.Fatalf("the turn: %d, want %d", status, c.status)
			}
			want := 0
			if status == 200 {
				want = 1
			}
			if n := ledger.admitted(); n != want {
				t.Errorf("the shared ledger counts %d turns, want %d", n, want)
			}
			if n := turnsOf(rt, "shared"); n != want {
				t.Errorf("the request used %d turns, want %d", n, want)
			}
		})
	}
}

// TestTooLargePromptRefusalsInARow34: a turn refused over its token budget
// before it is sent (its prompt alone past what is left) counts among the
// request's refusals in a row, as the runtime's own budget refusals do,
// now that it spends no turn: an agent that sends it again and again is
// stopped at the eighth, not left to run until its wall clock (before, its
// turns budget ran out, which refused it; now nothing else would).
func TestTooLargePromptRefusalsInARow34(t *testing.T) {
	m := &capModel{gate: func(int, *http.Request) {}}
	srv, rt := newBudgetProxy(t, m, &reach.Budget{Turns: 30, Tokens: 1000}, 0)
	long := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("word ", 2000) + `"}]}`
	for n := 1; n <= 8; n++ {
		if status, _ := sendTurn(t, srv.URL, "again", long); status < 400 {
			t.Fatalf("refused turn %d: %d", n, status)
		}
	}
	for _, r := range rt.Requests() {
		if r.ID() == "again" && r.StopCause() == nil {
			t.Errorf("the request runs on after 8 refused turns in a row, want it stopped")
		}
	}
	if n := turnsOf(rt, "again"); n != 0 {
		t.Errorf("the request used %d turns, want 0", n)
	}
}
