package modelproxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// spentTurnsLedger is a shared ledger on which the request's turns are
// spent on every instance together: it refuses every turn, as the
// cluster's AdmitTurn does then.
type spentTurnsLedger struct{ spentLedger }

func (*spentTurnsLedger) AdmitTurn(_ context.Context, req *reach.Request) (int64, bool, error) {
	return 0, false, &reach.Error{Guard: "admit", Type: reach.TypeBudget, Code: "budget_turns",
		Message:    "The turn budget of this request (" + req.ID() + ") is spent: 1 turns made of 1, on every instance.",
		Suggestion: "Finish with what you have and give your final answer, or ask the user for a larger budget."}
}

// A model turn the shared ledger refuses (a turns budget spent on every
// instance together, after the turn's frame began) counts among the
// request's refusals in a row, as a turn the runtime refuses itself: the
// eighth stops the request, its error the stop's text, and the model is
// never asked. Before, these turns were not counted and ran on.
func TestSharedTurnRefusalsCounted(t *testing.T) {
	up, asked := countingModel(t, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`)
	rt := reach.New(nil)
	p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m", APIKey: config.Secret("sk-gateway")},
		Choices: &link.ModelChoices{}, Models: rt, Breakers: rt, Ledger: &spentTurnsLedger{},
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
	srv := httptest.NewServer(p)
	defer srv.Close()
	turn := func() (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"again"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("baggage", "reach.request=shared-turns")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	const stopText = "refused 8 times in a row"
	for n := 1; n <= 8; n++ {
		code, body := turn()
		stopped := strings.Contains(body, stopText)
		if code < 400 || stopped != (n == 8) || n < 8 && !strings.Contains(body, "budget_turns") {
			t.Fatalf("refused turn %d: %d %.300s; want refused, with the stop's text at the eighth", n, code, body)
		}
	}
	if code, body := turn(); code < 400 || !strings.Contains(body, stopText) {
		t.Errorf("the turn after the stop: %d %.300s; want refused with the stop's text", code, body)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the model was asked %d times, want never", n)
	}
}
