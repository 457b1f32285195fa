package modelproxy

import (
	"bufio"
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

// TestStreamCutByTheClientCharged34: a streamed turn whose client leaves
// after its first words (a user's stop button) is charged what the model
// read and wrote so far, once, in memory and on the shared ledger alike,
// and counts its turn (the model answered it); what it held is let go, so
// that the request's next turn runs at once with the rest of the budget.
func TestStreamCutByTheClientCharged34(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c2","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for range 20 {
			io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"some words of the answer "}}]}`+"\n\n")
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the rest never comes: the client leaves first
	}))
	defer up.Close()
	ledger := &spentLedger{}
	rt := reach.New(nil)
	p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m"}, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt, Ledger: ledger,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{Default: &reach.Budget{Turns: 5, Tokens: 100000}})})
	srv := httptest.NewServer(p)
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`))
	req.Header.Set(link.HeaderRequest, "cut")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "some words") {
	}
	cancel()
	resp.Body.Close()

	var r *reach.Request
	for _, q := range rt.Requests() {
		if q.ID() == "cut" {
			r = q
		}
	}
	if r == nil {
		t.Fatal("no request cut")
	}
	// The turn ends once the proxy sees its client gone.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		done := false
		for _, f := range r.Frames() {
			done = done || f.Kind == reach.ModelFrame && f.State().Done()
		}
		if done {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The ledger's charge is settled as the handler returns: wait for it.
	for time.Now().Before(deadline) && ledger.spent() != r.Usage().Tokens {
		time.Sleep(5 * time.Millisecond)
	}
	u := r.Usage()
	if u.Tokens <= 0 {
		t.Errorf("the cut turn charged %d tokens, want its prompt and the words read", u.Tokens)
	}
	if got := ledger.spent(); got != u.Tokens {
		t.Errorf("the shared ledger has %d tokens of the cut turn, the request's meter %d: want the same charge", got, u.Tokens)
	}
	if u.Turns != 1 {
		t.Errorf("the request counts %d turns, want the 1 the model answered", u.Turns)
	}
	// Nothing of the cut turn is held: the next turn runs at once.
	body := `{"model":"m","messages":[{"role":"user","content":"go"}]}`
	if s, code := sendTurn(t, srv.URL, "cut", body); s != 200 {
		t.Errorf("the next turn: %d %s, want 200", s, code)
	}
	if u := r.Usage(); u.Turns != 2 {
		t.Errorf("the request counts %d turns, want 2", u.Turns)
	}
}
