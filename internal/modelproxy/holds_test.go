package modelproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/budget"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// capModel is a chat model that spends all it may: its answer is as long
// as the turn's max_completion_tokens (or max_tokens) allows, or spend
// tokens when spend is not zero. Each call waits at gate(arrived) before
// it answers; peak is the most calls it had at once.
type capModel struct {
	spend int64
	gate  func(arrived int, r *http.Request)

	mu            sync.Mutex
	in, peak, all int
}

func (m *capModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	json.NewDecoder(r.Body).Decode(&body)
	m.mu.Lock()
	m.in++
	m.all++
	m.peak = max(m.peak, m.in)
	arrived := m.all
	m.mu.Unlock()
	defer func() { m.mu.Lock(); m.in--; m.mu.Unlock() }()
	m.gate(arrived, r)
	out := m.spend
	if out == 0 {
		out = 1 << 20 // a turn with no cap spends a lot
		for _, k := range []string{"max_completion_tokens", "max_tokens"} {
			var v int64
			if json.Unmarshal(body[k], &v) == nil && v > 0 {
				out = min(out, v)
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"length"}],"usage":{"prompt_tokens":10,"completion_tokens":%d,"total_tokens":%d}}`, out, out+10)
}

func (m *capModel) peakCalls() int { m.mu.Lock(); defer m.mu.Unlock(); return m.peak }

// newBudgetProxy is a proxy to up whose new requests have budget, its
// model's calls timing out after timeout (0: the default).
func newBudgetProxy(t *testing.T, up http.Handler, budget *reach.Budget, timeout time.Duration) (*httptest.Server, *reach.Runtime) {
	t.Helper()
	ups := httptest.NewServer(up)
	t.Cleanup(ups.Close)
	rt := reach.New(nil)
	p := New(&Options{Model: &config.ModelConfig{BaseURL: ups.URL + "/v1", Name: "m", Timeout: config.Duration(timeout)}, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{Default: budget})})
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv, rt
}

// turnsAtOnce sends n chat turns of request id at once, and returns their
// statuses and error codes.
func turnsAtOnce(t *testing.T, url, id, body string, n int) (statuses []int, codes []string) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(link.HeaderRequest, id)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var out struct{ Error struct{ Code string } }
			json.NewDecoder(resp.Body).Decode(&out)
			mu.Lock()
			statuses, codes = append(statuses, resp.StatusCode), append(codes, out.Error.Code)
			mu.Unlock()
		})
	}
	wg.Wait()
	return statuses, codes
}

// spentBy is what request id has spent, in tokens.
func spentBy(rt *reach.Runtime, id string) int64 {
	for _, r := range rt.Requests() {
		if r.ID() == id {
			return r.Usage().Tokens
		}
	}
	return -1
}

// TestTurnsAtOnceNeverPassTheBudget: 8 model turns of one request at once,
// each spending all its answer's cap allows, never together spend past the
// request's 1,000-token budget. Each holds its prompt and its cap while it
// runs, and a turn's cap is what the holds leave. A turn with no max_tokens
// holds all that is left: the others wait for it, and then are refused as
// the budget is spent (402), or run one after another when it spent little;
// turns with a small max_tokens run at once. Before, each turn was capped at
// what was left before the others were charged: the model had two calls
// at once, and the 8 turns spent about 8,000 tokens.
func TestTurnsAtOnceNeverPassTheBudget(t *testing.T) {
	const budget, n = 1000, 8
	body := `{"model":"m","messages":[{"role":"user","content":"go"}]}`
	// overlap holds a call until a second one comes (without holds, they
	// all come at once), or for a while: with holds, none comes.
	overlap := func(arrived int, r *http.Request, second chan struct{}, once *sync.Once) {
		if arrived >= 2 {
			once.Do(func() { close(second) })
		}
		select {
		case <-second:
		case <-time.After(200 * time.Millisecond):
		case <-r.Context().Done():
		}
	}

	t.Run("no max_tokens, spending all", func(t *testing.T) {
		second, once := make(chan struct{}), &sync.Once{}
		m := &capModel{}
		m.gate = func(a int, r *http.Request) { overlap(a, r, second, once) }
		srv, rt := newBudgetProxy(t, m, &reach.Budget{Tokens: budget}, 0)
		statuses, codes := turnsAtOnce(t, srv.URL, "all", body, n)
		if spent := spentBy(rt, "all"); spent > budget {
			t.Errorf("the %d turns at once spent %d tokens of a %d-token budget (statuses %v)", n, spent, budget, statuses)
		}
		for i, s := range statuses {
			if s != 200 && (s != http.StatusPaymentRequired || codes[i] != "budget_tokens") {
				t.Errorf("a turn was answered %d %s, want 200, or 402 budget_tokens once the budget is spent", s, codes[i])
			}
		}
		if m.peakCalls() != 1 {
			t.Errorf("the model had %d calls at once, want 1: a turn with no max_tokens holds all that is left", m.peakCalls())
		}
	})

	t.Run("no max_tokens, spending little", func(t *testing.T) {
		second, once := make(chan struct{}), &sync.Once{}
		m := &capModel{spend: 20}
		m.gate = func(a int, r *http.Request) { overlap(a, r, second, once) }
		srv, rt := newBudgetProxy(t, m, &reach.Budget{Tokens: budget}, 0)
		statuses, _ := turnsAtOnce(t, srv.URL, "little", body, n)
		for _, s := range statuses {
			if s != 200 {
				t.Errorf("statuses %v, want every turn answered one after another", statuses)
				break
			}
		}
		if spent := spentBy(rt, "little"); spent > budget {
			t.Errorf("spent %d tokens of a %d-token budget", spent, budget)
		}
		if m.peakCalls() != 1 {
			t.Errorf("the model had %d calls at once, want 1: each turn with no max_tokens holds all that is left", m.peakCalls())
		}
	})

	t.Run("small max_tokens", func(t *testing.T) {
		all := make(chan struct{})
		m := &capModel{}
		m.gate = func(a int, r *http.Request) {
			if a == n {
				close(all)
			}
			select { // every turn fits at once: the model waits for all of them
			case <-all:
			case <-time.After(10 * time.Second):
			case <-r.Context().Done():
			}
		}
		srv, rt := newBudgetProxy(t, m, &reach.Budget{Tokens: budget}, 0)
		statuses, _ := turnsAtOnce(t, srv.URL, "small", `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"go"}]}`, n)
		for _, s := range statuses {
			if s != 200 {
				t.Errorf("statuses %v, want every turn answered", statuses)
				break
			}
		}
		if m.peakCalls() != n {
			t.Errorf("the model had %d calls at once, want %d: each holds its prompt and 50 tokens, and all fit", m.peakCalls(), n)
		}
		if spent := spentBy(rt, "small"); spent != n*60 {
			t.Errorf("spent %d tokens, want %d", spent, n*60)
		}
	})
}

// TestTurnHeldTooLongIsRefused: a turn that the holds of a running turn
// leave too little waits for it as long as its model's timeout, and is
// then refused with a 503 the client may retry, which says what holds the
// budget and what to do; nothing of it reached the model.
func TestTurnHeldTooLongIsRefused(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) > 1 {
			http.Error(w, "only the first turn was to reach the model", http.StatusTeapot)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"a"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":10,"total_tokens":20}}`+"\n\ndata: [DONE]\n\n")
	})
	srv, _ := newBudgetProxy(t, up, &reach.Budget{Tokens: 1000}, 500*time.Millisecond)
	first, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`))
	first.Header.Set(link.HeaderRequest, "held")
	resp, err := http.DefaultClient.Do(first) // a stream's turn times out after 10 minutes, at the least
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()

	statuses, codes := turnsAtOnce(t, srv.URL, "held", `{"model":"m","messages":[{"role":"user","content":"more"}]}`, 1)
	if statuses[0] != http.StatusServiceUnavailable || codes[0] != "budget_tokens_held" {
		t.Errorf("the held turn was answered %d %s, want 503 budget_tokens_held", statuses[0], codes[0])
	}
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"more"}]}`))
	req.Header.Set(link.HeaderRequest, "held")
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r2.Body)
	r2.Body.Close()
	if r2.Header.Get("X-Should-Retry") != "true" || !strings.Contains(string(b), "held by 1 model turns") || !strings.Contains(string(b), "max_tokens") {
		t.Errorf("the refusal (x-should-retry %q) is %s; want it retried, naming the turn that holds the budget and max_tokens", r2.Header.Get("X-Should-Retry"), b)
	}
	close(release)
	io.Copy(io.Discard, resp.Body)
	if n := calls.Load(); n != 1 {
		t.Errorf("the model had %d calls, want only the first turn's", n)
	}
}

// TestHoldsBindTheRequestsAbove: a turn of one sub-request holds what it
// may spend on its parent too, so that a turn of a sibling (whose own
// budget is the parent's whole) waits for it; once it is let go the
// sibling gets the cap the first had, and a wait that ends first is a
// budget_tokens_held refusal naming the parent.
func TestHoldsBindTheRequestsAbove(t *testing.T) {
	rt := reach.New(nil)
	ctx, root, err := rt.Begin(context.Background(), &reach.RequestOptions{Budget: &reach.Budget{Tokens: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	defer root.End()
	var subs []*reach.Request
	for _, agent := range []string{"a", "b"} {
		_, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: agent, Task: "task " + agent, Fraction: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.End()
		subs = append(subs, sub)
	}
	if subs[1].Budget().Tokens != 1000 {
		t.Fatalf("the sub-request's budget is %d tokens, want its parent's 1000", subs[1].Budget().Tokens)
	}
	var h holds
	capA, _, releaseA, err := h.take(context.Background(), subs[0], ask{prompt: 100, asked: 0, minimum: 1, wait: time.Minute}, SharedLeft{}, nil)
	if err != nil || capA <= 0 || capA > 900 {
		t.Fatalf("the first turn's cap is %d (%v), want one in (0, 900]", capA, err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := h.take(gone, subs[1], ask{prompt: 100, asked: 0, minimum: 1, wait: time.Minute}, SharedLeft{}, nil); err != context.Canceled {
		t.Fatalf("a sibling's turn while the first holds the parent's budget: %v, want it to wait (until its client went away)", err)
	}
	_, _, _, err = h.take(context.Background(), subs[1], ask{prompt: 100, asked: 0, minimum: 1, wait: 0}, SharedLeft{}, nil)
	var re *reach.Error
	if !errors.As(err, &re) || re.Code != "budget_tokens_held" || re.Type != reach.TypeTransient || !strings.Contains(re.Message, root.ID()) {
		t.Fatalf("a sibling's turn whose wait ended: %v, want budget_tokens_held naming the parent %s", err, root.ID())
	}
	if _, _, _, err := h.take(context.Background(), subs[1], ask{prompt: 100, asked: 50, minimum: 1, wait: 0}, SharedLeft{}, nil); err == nil {
		t.Fatal("a sibling's turn asking 50 tokens passed, with the parent's budget all held")
	}
	releaseA()
	releaseA() // once only
	capB, _, releaseB, err := h.take(context.Background(), subs[1], ask{prompt: 100, asked: 0, minimum: 1, wait: time.Minute}, SharedLeft{}, nil)
	if err != nil || capB != capA {
		t.Fatalf("the sibling's turn once the first was let go: cap %d (%v), want %d", capB, err, capA)
	}
	releaseB()
	if len(h.tokens) != 0 || len(h.turns) != 0 {
		t.Errorf("holds left after every turn was let go: %v %v", h.tokens, h.turns)
	}
}

// TestHoldsCostBudgetCapsTheAnswer: a cost budget caps a priced turn's
// answer at what is left of it once its prompt is counted at the model's
// input price, counted at the output price; a second turn at the same
// time gets only what the first's hold leaves, and waits when that is less
// than it would get alone; a prompt that alone costs more than is left is
// refused (budget_cost). Unpriced, a cost budget caps nothing.
func TestHoldsCostBudgetCapsTheAnswer(t *testing.T) {
	rt := reach.New(nil)
	_, root, err := rt.Begin(context.Background(), &reach.RequestOptions{Budget: &reach.Budget{Cost: 0.001}})
	if err != nil {
		t.Fatal(err)
	}
	defer root.End()
	// 1 per million prompt tokens, 2 per million answer tokens: of
	// 0.001, a prompt of 100 tokens costs 0.0001, and 0.0009 pays 450
	// tokens of answer.
	price := budget.Price{Input: 1, Output: 2}
	var h holds
	capA, _, releaseA, err := h.take(context.Background(), root, ask{prompt: 100, asked: 300, minimum: 1, price: price, priced: true, wait: time.Minute}, SharedLeft{}, nil)
	if err != nil || capA != 300 {
		t.Fatalf("a turn asking 300 tokens with 450 paid for: cap %d (%v), want 300", capA, err)
	}
	if h.cost[root] != 100*1000+300*2000 {
		t.Fatalf("the turn holds %d nano-units, want its prompt's and its answer's cap's cost, %d", h.cost[root], 100*1000+300*2000)
	}
	if _, _, _, err := h.take(context.Background(), root, ask{prompt: 100, asked: 300, minimum: 1, price: price, priced: true, wait: 0}, SharedLeft{}, nil); err == nil {
		t.Fatal("a second turn asking 300 while the first holds 0.0007 of 0.001 passed")
	}
	releaseA()
	capB, told, releaseB, err := h.take(context.Background(), root, ask{prompt: 100, asked: 1000, minimum: 1, price: price, priced: true, wait: time.Minute}, SharedLeft{}, nil)
	if err != nil || capB > 450 || capB <= 0 || !told {
		t.Fatalf("a turn asking 1,000 tokens with 450 paid for: cap %d, told %v (%v), want at most 450, told to finish", capB, told, err)
	}
	releaseB()
	_, _, _, err = h.take(context.Background(), root, ask{prompt: 2000, minimum: 1, price: price, priced: true, wait: time.Minute}, SharedLeft{}, nil)
	var re *reach.Error
	if !errors.As(err, &re) || re.Code != "budget_cost" || re.Type != reach.TypeBudget {
		t.Fatalf("a prompt costing 0.002 of 0.001 left: %v, want budget_cost", err)
	}
	capU, _, releaseU, err := h.take(context.Background(), root, ask{prompt: 2000, asked: 5000, minimum: 1, wait: time.Minute}, SharedLeft{}, nil)
	if err != nil || capU != 0 {
		t.Fatalf("an unpriced turn under a cost budget: cap %d (%v), want none", capU, err)
	}
	releaseU()
}

// TestHoldsSharedLedgerRefusesThenTakes: a turn whose hold the shared
// ledger refuses (other instances' turns hold what it needs) is capped
// again by what the ledger said, waits while that leaves less than it
// would get alone, asks again, and takes its hold once the others let go;
// a wait that ends first is budget_tokens_held naming the turns of every
// instance. Nothing stays held on this instance after a refusal.
func TestHoldsSharedLedgerRefusesThenTakes(t *testing.T) {
	rt := reach.New(nil)
	_, root, err := rt.Begin(context.Background(), &reach.RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer root.End()
	sl := SharedLeft{Tokens: 1000, TokensLimited: true}
	var asked []int64
	others := int64(700) // held by other instances' turns
	hs := func(tokens, cost, needTokens, needCost int64) (bool, SharedLeft, error) {
		asked = append(asked, tokens)
		if len(asked) >= 4 {
			others = 0 // they let go
		}
		if others > 0 && tokens > 1000-others {
			return false, SharedLeft{Tokens: 1000, TokensLimited: true, FreeTokens: 1000 - others, Known: true}, nil
		}
		return true, SharedLeft{}, nil
	}
	var h holds
	cap, _, release, err := h.take(context.Background(), root, ask{prompt: 100, asked: 500, minimum: 1, wait: time.Minute}, sl, hs)
	if err != nil || cap != 500 {
		t.Fatalf("a turn asking 500 once the others let go: cap %d (%v), want 500", cap, err)
	}
	if len(asked) != 4 || asked[3] != 600 {
		t.Fatalf("the shared ledger was asked for %v, want 600 four times (refused three times, then taken)", asked)
	}
	release()
	others, asked = 700, nil
	_, _, _, err = h.take(context.Background(), root, ask{prompt: 100, asked: 500, minimum: 1, wait: 0}, sl, func(tokens, cost, n, nc int64) (bool, SharedLeft, error) {
		asked = append(asked, tokens)
		return false, SharedLeft{Tokens: 1000, TokensLimited: true, FreeTokens: 300, Known: true}, nil
	})
	var re *reach.Error
	if !errors.As(err, &re) || re.Code != "budget_tokens_held" || !strings.Contains(re.Message, "every gateway instance") || !strings.Contains(re.Message, "700 are held") {
		t.Fatalf("a turn whose wait ended while other instances held 700 of 1,000: %v, want budget_tokens_held naming them", err)
	}
	if len(h.tokens) != 0 || len(h.turns) != 0 {
		t.Errorf("holds left on this instance after refusals: %v %v", h.tokens, h.turns)
	}
}

// unholdFlaky is a Holder whose store refuses the first fails attempts to
// let go of a hold (a blip), then takes them.
type unholdFlaky struct {
	mu       sync.Mutex
	fails    int
	attempts int
	held     map[string]bool
}

func (u *unholdFlaky) AdmitTurnLeft(context.Context, *reach.Request) (SharedLeft, error) {
	return SharedLeft{}, nil
}

func (u *unholdFlaky) HoldTurn(context.Context, *reach.Request, string, Spend, Spend, Spend) (bool, SharedLeft, error) {
	return true, SharedLeft{}, nil
}

func (u *unholdFlaky) Unhold(ctx context.Context, turn string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.attempts++
	if u.attempts <= u.fails {
		return errors.New("the store did not answer")
	}
	delete(u.held, turn)
	return nil
}

// TestHoldLetGoAfterTheStoreRefused: a hold the shared ledger did not let go
// of (a store blip) would count for as long as the instance lives, and
// every later turn of its request tree would wait for it and be refused
// budget_tokens_held. Letting go is tried again until the store takes it.
func TestHoldLetGoAfterTheStoreRefused(t *testing.T) {
	u := &unholdFlaky{fails: 3, held: map[string]bool{"turn-1": true}}
	letGoShared(&retrier{}, slog.New(slog.DiscardHandler), u, "r1", "turn-1", 20*time.Millisecond)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		u.mu.Lock()
		held, attempts := u.held["turn-1"], u.attempts
		u.mu.Unlock()
		if !held {
			if attempts != 4 {
				t.Fatalf("let go after %d attempts, want 4 (three refused, then taken)", attempts)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hold is still held a minute after the store refused its first %d attempts (%d made)", u.fails, attempts)
		}
	}
}

// spendFlaky is a shared ledger whose first fails debits the store
// refuses.
type spendFlaky struct {
	mu       sync.Mutex
	fails    int
	attempts int
	tokens   int64
	letGo    bool // then was called
	early    bool // then was called before the charge was taken
}

func (s *spendFlaky) AdmitTurn(context.Context, *reach.Request) (int64, bool, error) {
	return 0, false, nil
}

func (s *spendFlaky) Spend(_ context.Context, _ *reach.Request, tokens, _ int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if s.attempts <= s.fails {
		return errors.New("the store did not answer")
	}
	s.tokens += tokens
	return nil
}

// TestChargeAfterTheStoreRefused: a turn's charge the shared ledger
// refused (the store restarted as the answer was read) is debited again
// until the store takes it, once, and the turn's hold is let go only
// then. Before, it was dropped: the answered turn's tokens were never
// spent on the ledger (TestCrash25RandomOnInstances, PostgreSQL restarted
// mid-turn: 15 tokens spent, the prompt, for a turn of 150 answered).
func TestChargeAfterTheStoreRefused(t *testing.T) {
	rt := reach.New(&reach.Options{DisableLoopGuard: true})
	_, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	s := &spendFlaky{fails: 3}
	chargeShared(&retrier{}, slog.New(slog.DiscardHandler), s, req, 135, 0, 20*time.Millisecond, func() {
		s.mu.Lock()
		s.letGo, s.early = true, s.tokens == 0
		s.mu.Unlock()
	})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		letGo, early, tokens, attempts := s.letGo, s.early, s.tokens, s.attempts
		s.mu.Unlock()
		if letGo {
			if early || tokens != 135 || attempts != 4 {
				t.Fatalf("the hold let go with %d tokens debited after %d attempts (before the charge: %v); want 135, after 4 (three refused, then taken)", tokens, attempts, early)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the charge is not debited a minute after the store refused its first %d attempts (%d made, %d tokens)", s.fails, attempts, tokens)
		}
	}
}
