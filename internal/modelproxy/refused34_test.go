package modelproxy

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// TestRefusedConnectionIsNoTimeout: a model endpoint that refuses the
// connection (nothing listens at its URL) is told as such, with what to
// check, not as "no answer within" the timeout; and its turn is charged
// nothing, as nothing reached a model. Before, the attempt's context was
// ended before its error was read: every transport error read as a
// timeout, and was charged the prompt's estimate.
func TestRefusedConnectionIsNoTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	rt := reach.New(nil)
	p := New(&Options{Model: &config.ModelConfig{BaseURL: "http://" + addr + "/v1", Name: "m"}, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{Default: &reach.Budget{Tokens: 200000}})})
	srv := httptest.NewServer(p)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"`+strings.Repeat("word ", 400)+`"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(link.HeaderRequest, "req-refused")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Error struct{ Code, Message string }
	}
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != http.StatusBadGateway || out.Error.Code != "model_unreachable" {
		t.Fatalf("%d %+v", resp.StatusCode, out.Error)
	}
	if m := out.Error.Message; strings.Contains(m, "no answer within") || !strings.Contains(m, "refused") || !strings.Contains(m, "base_url") {
		t.Errorf("a refused connection told as: %q", m)
	}
	if s := spentBy(rt, "req-refused"); s != 0 {
		t.Errorf("a turn that reached no model charged %d tokens", s)
	}
}

// TestDroppedConnectionCharged: an endpoint that read the request and then
// dropped the connection may have billed its prompt: the turn is charged
// the prompt's estimate, as a timeout is, so that a failing endpoint
// cannot get around a budget; only a call that was never sent is free.
func TestDroppedConnectionCharged(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	}))
	defer up.Close()
	srv, rt := newBudgetProxy(t, up.Config.Handler, &reach.Budget{Tokens: 200000}, 0)
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"`+strings.Repeat("word ", 400)+`"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(link.HeaderRequest, "req-dropped")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("%d", resp.StatusCode)
	}
	if s := spentBy(rt, "req-dropped"); s <= 0 {
		t.Errorf("a turn whose endpoint read its prompt and dropped the connection charged %d tokens", s)
	}
}
