package modelproxy

import (
	"context"
	"io"
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

// costLedger is a shared ledger that keeps every cost debited.
type costLedger struct {
	mu    sync.Mutex
	costs []int64
}

func (l *costLedger) AdmitTurn(context.Context, *reach.Request) (int64, bool, error) {
	return 0, false, nil
}

func (l *costLedger) Spend(_ context.Context, _ *reach.Request, _, costNano int64) error {
	l.mu.Lock()
	l.costs = append(l.costs, costNano)
	l.mu.Unlock()
	return nil
}

// TestHugeUsageNeverRefunds: an endpoint that reports more tokens than any
// cost fits in (a hostile or broken one) is charged everything, and the
// shared ledger was debited the turn's cost as the float cost times 1e9
// made an int64: past the int64's range that is the most negative number
// on amd64, a refund of everything instead. The ledger is now debited the
// charge as counted, in billionths, never below zero.
func TestHugeUsageNeverRefunds(t *testing.T) {
	for _, c := range []struct{ name, body, answer string }{
		{"whole", `{"model":"m","messages":[{"role":"user","content":"go"}]}`,
			`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":4611686018427387904,"completion_tokens":1,"total_tokens":4611686018427387905}}`},
		{"a stream cut after its usage", `{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`,
			`data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"ok"}}]}` + "\n\n" +
				`data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":4611686018427387904,"completion_tokens":1,"total_tokens":4611686018427387905}}` + "\n\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if strings.HasPrefix(c.answer, "data:") {
					w.Header().Set("Content-Type", "text/event-stream")
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				io.WriteString(w, c.answer)
			}))
			defer up.Close()
			ledger := &costLedger{}
			prices := map[string]reach.Price{"m": {Input: 1, Output: 1}} // the runtime's and the proxy's, as the gateway gives both
			rt := reach.New(&reach.Options{Prices: prices})
			p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m", APIKey: config.Secret("sk-gateway"), Prices: prices},
				Choices: &link.ModelChoices{}, Models: rt, Breakers: rt, Ledger: ledger,
				Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
			srv := httptest.NewServer(p)
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			srv.Close() // the handler has returned: its debits are made
			ledger.mu.Lock()
			defer ledger.mu.Unlock()
			var sum int64
			for _, x := range ledger.costs {
				if x < 0 {
					t.Errorf("the ledger was debited %d billionths (of %v): a refund, for a turn that spent everything", x, ledger.costs)
				}
				if sum += x; sum < 0 {
					sum = 1<<63 - 1
				}
			}
			if sum < 1<<62 {
				t.Errorf("the ledger was debited %d billionths in all (%v), want everything", sum, ledger.costs)
			}
		})
	}
}
