package gateway

import (
	"strings"
	"testing"
)

// An agent that goes on sending model turns through the model proxy once
// its request's turns budget is spent: each turn is refused (402
// budget_turns) without asking the model, and the eighth refused turn in a
// row stops the request, its error the stop's text; the next turn is
// refused as stopped. Before, the refused turns were not counted and ran
// on until the request's wall clock.
func TestStreak22ModelTurnsRefused(t *testing.T) {
	fake := &fakeOpenAI{toolName: "search_kb", args: `{"query":"refunds"}`}
	_, srv := proxyGateway(t, fake, "examples: true\nbudgets:\n  default: {turns: 1}\n")
	h := map[string]string{"baggage": "reach.request=mt1"}
	if resp, body := postChat(t, srv.URL, `{"model":"fake","messages":[{"role":"user","content":"refunds?"}]}`, h); resp.StatusCode != 200 {
		t.Fatalf("the first turn: %d %s", resp.StatusCode, body)
	}
	for n := 1; n <= 8; n++ {
		resp, body := postChat(t, srv.URL, `{"model":"fake","messages":[{"role":"user","content":"again"}]}`, h)
		stopped := strings.Contains(string(body), "refused 8 times in a row")
		if resp.StatusCode < 400 || stopped != (n == 8) || n < 8 && !strings.Contains(string(body), "budget_turns") {
			t.Fatalf("refused turn %d: %d %.300s; want refused, with the stop's text at the eighth", n, resp.StatusCode, body)
		}
	}
	resp, body := postChat(t, srv.URL, `{"model":"fake","messages":[{"role":"user","content":"again"}]}`, h)
	if resp.StatusCode < 400 || !strings.Contains(string(body), "refused 8 times in a row") {
		t.Errorf("the turn after the stop: %d %.300s; want refused with the stop's text", resp.StatusCode, body)
	}
	if n := fake.n.Load(); n != 1 {
		t.Errorf("the model was asked %d times, want once", n)
	}
}
