package modelproxy

import (
	"bufio"
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

// spentLedger is a shared ledger that admits every turn and adds up what
// is debited.
type spentLedger struct {
	mu     sync.Mutex
	tokens int64
}

func (l *spentLedger) AdmitTurn(context.Context, *reach.Request) (int64, bool, error) {
	return 0, false, nil
}

func (l *spentLedger) Spend(_ context.Context, _ *reach.Request, tokens, _ int64) error {
	l.mu.Lock()
	l.tokens += tokens
	l.mu.Unlock()
	return nil
}

func (l *spentLedger) spent() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tokens
}

// A turn's tokens are debited from the shared ledger before the end of
// its answer reaches the client (a chat stream's [DONE], a Responses API
// stream's response.completed): an instance killed once its client has the
// answer leaves them spent. The model holds its stream open after its
// last event until the client has read it, so that the proxy has not
// reached the turn's end when the client looks: before, the tokens were
// debited only then, and a kill there lost them (docs/STATE.md,
// model.answered).
func TestTurnChargedBeforeItsAnswerEnds(t *testing.T) {
	for _, c := range []struct {
		name, path, body, events, last string
	}{
		{"chat", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`,
			`data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]}` + "\n\n" +
				`data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150}}` + "\n\n" +
				"data: [DONE]\n\n",
			"data: [DONE]"},
		{"responses", "/v1/responses", `{"model":"m","stream":true,"input":"go"}`,
			"event: response.created\n" + `data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}` + "\n\n" +
				"event: response.completed\n" + `data: {"type":"response.completed","sequence_number":1,"response":{"id":"resp_1","status":"completed","output":[],"usage":{"input_tokens":100,"output_tokens":50,"total_tokens":150}}}` + "\n\n",
			`data: {"type":"response.completed"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			release := make(chan struct{})
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, c.events)
				w.(http.Flusher).Flush()
				select { // the stream stays open: the proxy reads on
				case <-release:
				case <-r.Context().Done():
				}
			}))
			defer up.Close()
			var once sync.Once
			end := func() { once.Do(func() { close(release) }) }
			defer end()
			ledger := &spentLedger{}
			rt := reach.New(nil)
			p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m", APIKey: config.Secret("sk-gateway")},
				Choices: &link.ModelChoices{}, Models: rt, Breakers: rt, Ledger: ledger,
				Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
			srv := httptest.NewServer(p)
			defer srv.Close()
			resp, err := http.Post(srv.URL+c.path, "application/json", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), c.last) {
					if got := ledger.spent(); got != 150 {
						t.Fatalf("the client has the answer's end (%s), and the ledger has %d tokens of the turn; want its 150", c.last, got)
					}
					// The model's stream ends, and the turn with it (the
					// answer's end comes after the proxy's): debited once.
					end()
					io.Copy(io.Discard, resp.Body)
					if got := ledger.spent(); got != 150 {
						t.Fatalf("the turn ended, and the ledger has %d tokens of it; want its 150, once", got)
					}
					return
				}
			}
			t.Fatalf("the answer ended without %q (%v)", c.last, sc.Err())
		})
	}
}

// spendAtWrite is a ResponseWriter that notes what the ledger held when
// the answer's first byte was written.
type spendAtWrite struct {
	*httptest.ResponseRecorder
	ledger *spentLedger
	at     int64
	wrote  bool
}

func (w *spendAtWrite) Write(b []byte) (int, error) {
	if !w.wrote {
		w.wrote, w.at = true, w.ledger.spent()
	}
	return w.ResponseRecorder.Write(b)
}

// A turn answered whole (no stream) is debited, as a streamed one is
// (TestTurnChargedBeforeItsAnswerEnds), before its answer is written to
// the client, and once.
func TestWholeTurnChargedBeforeItsAnswer(t *testing.T) {
	for _, c := range []struct{ name, path, body, answer string }{
		{"chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"go"}]}`,
			`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150}}`},
		{"responses", "/v1/responses", `{"model":"m","input":"go"}`,
			`{"id":"resp_1","object":"response","status":"completed","output":[],"usage":{"input_tokens":100,"output_tokens":50,"total_tokens":150}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, c.answer)
			}))
			defer up.Close()
			ledger := &spentLedger{}
			rt := reach.New(nil)
			p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m", APIKey: config.Secret("sk-gateway")},
				Choices: &link.ModelChoices{}, Models: rt, Breakers: rt, Ledger: ledger,
				Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
			w := &spendAtWrite{ResponseRecorder: httptest.NewRecorder(), ledger: ledger}
			p.ServeHTTP(w, httptest.NewRequest("POST", c.path, strings.NewReader(c.body)))
			if w.Code != 200 || !w.wrote {
				t.Fatalf("the answer: %d %q", w.Code, w.Body.String())
			}
			if w.at != 150 {
				t.Errorf("the answer was written with %d tokens of the turn on the ledger; want its 150", w.at)
			}
			if got := ledger.spent(); got != 150 {
				t.Errorf("the turn ended, and the ledger has %d tokens of it; want its 150, once", got)
			}
		})
	}
}
