package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
)

// heldModel is a model endpoint whose answers wait until the test lets
// them go: each turn uses promptTokens of prompt and all of the answer it
// was capped at (max_tokens or max_completion_tokens), so that turns
// running at once spend what they were allowed.
type heldModel struct {
	url     string
	arrived chan int64 // the cap of each turn, as it arrives
	mu      sync.Mutex
	gate    chan struct{} // closed to let the waiting answers go
}

const heldModelPrompt = 10

func newHeldModel(t *testing.T) *heldModel {
	m := &heldModel{arrived: make(chan int64, 16), gate: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var asked struct {
			MaxTokens           int64 `json:"max_tokens"`
			MaxCompletionTokens int64 `json:"max_completion_tokens"`
		}
		json.Unmarshal(b, &asked)
		cap := asked.MaxTokens
		if asked.MaxCompletionTokens > 0 && (cap == 0 || asked.MaxCompletionTokens < cap) {
			cap = asked.MaxCompletionTokens
		}
		m.arrived <- cap
		m.mu.Lock()
		gate := m.gate
		m.mu.Unlock()
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			heldModelPrompt, cap, heldModelPrompt+cap)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(m.open)
	m.url = srv.URL
	return m
}

// open lets every answer waiting, and every later one, go.
func (m *heldModel) open() {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.gate:
	default:
		close(m.gate)
	}
}

// turnResult is a model turn's answer through the gateway.
type turnResult struct {
	status int
	body   string
}

// sendTurn asks base's model route for one turn of request, with
// max_tokens asked, and sends its answer on the channel it returns.
func sendTurn(base, request string, asked int) <-chan turnResult {
	out := make(chan turnResult, 1)
	go func() {
		body := fmt.Sprintf(`{"model":"m","max_tokens":%d,"messages":[{"role":"user","content":"go"}]}`, asked)
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Reach-Request", request)
		resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
		if err != nil {
			out <- turnResult{0, err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- turnResult{resp.StatusCode, string(b)}
	}()
	return out
}

// holdsFleet starts two `reach serve`, a and b, on one throwaway
// PostgreSQL (instance_ttl 5s: a loaded machine that delays a heartbeat
// by a second does not free a live turn's hold), with the model m behind both, budget (YAML) on every
// request, and model[i] more of instance i's model configuration; it
// returns their bases, their commands and the store's URL.
func holdsFleet(t *testing.T, m *heldModel, budget string, model [2]string) (base [2]string, cmd [2]*exec.Cmd, url string) {
	pg := pgtest.Own(t)
	url, err := pg.CreateDatabase(context.Background(), "reach")
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"a", "b"} {
		addr := freeAddr(t)
		cfg := writeConfig(t, fmt.Sprintf(`store: %s
instance: %s
instance_ttl: 5s
model: {base_url: '%s', %s}
budgets:
  default: %s
`, url, name, m.url, model[i], budget))
		cmd[i] = startReach(t, cfg, addr, t.TempDir())
		base[i] = "http://" + addr
	}
	return base, cmd, url
}

// spentOn reads what request id spent, as the shared ledger has it, and
// what the turns of every instance still hold on it.
func spentOn(t *testing.T, url, id string) (tokens, costNano, held int64, turns int) {
	t.Helper()
	st, err := postgres.Open(context.Background(), url, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.Spent(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	h, n, err := st.Holds(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s.Tokens, s.CostNano, h.Tokens, n
}

// Two model turns of one request at once, one through each of two
// instances, on a token budget of 1,000: each asks for 600 tokens of
// answer, and each answer uses all it was allowed. Without holds on the
// shared ledger each instance capped its turn at what was left before the
// other's was charged, and together they spent about 1,220. The second
// turn waits while the first holds its cap, and is refused (503
// budget_tokens_held, to be retried) when its model's timeout passes; its
// retry once the first ended is capped at what is left.
func TestHolds24TurnsOnTwoInstancesKeepTheTokenBudget(t *testing.T) {
	m := newHeldModel(t)
	// The first turn's model call may wait a minute; the second turn
	// waits for the budget for as long as its model's timeout, 2 s.
	base, _, url := holdsFleet(t, m, "{tokens: 1000}", [2]string{"timeout: 1m", "timeout: 2s"})
	first := sendTurn(base[0], "R1", 600)
	if cap := <-m.arrived; cap != 600 {
		t.Fatalf("the first turn reached the model capped at %d, want the 600 it asked", cap)
	}
	second := sendTurn(base[1], "R1", 600)
	var r2 turnResult
	select {
	case cap := <-m.arrived:
		m.open()
		r1 := <-first
		<-second
		tokens, _, _, _ := spentOn(t, url, "R1")
		t.Fatalf("the second turn reached the model (capped at %d) while the first held 600 of the 1,000-token budget: the first answered %d; the two spent %d tokens",
			cap, r1.status, tokens)
	case r2 = <-second:
	}
	if r2.status != http.StatusServiceUnavailable || !strings.Contains(r2.body, "budget_tokens_held") || !strings.Contains(r2.body, "every gateway instance") {
		t.Fatalf("the second turn, while the first held its cap on the other instance: %d %s, want 503 budget_tokens_held naming the turns of every instance", r2.status, r2.body)
	}
	m.open()
	if r1 := <-first; r1.status != http.StatusOK {
		t.Fatalf("the first turn: %d %s", r1.status, r1.body)
	}
	spent, _, held, turns := spentOn(t, url, "R1")
	if spent != heldModelPrompt+600 || turns != 0 {
		t.Fatalf("after the first turn: %d tokens spent, %d held by %d turns; want %d spent and no hold left", spent, held, turns, heldModelPrompt+600)
	}
	again := sendTurn(base[1], "R1", 600)
	cap := <-m.arrived
	if r := <-again; r.status != http.StatusOK {
		t.Fatalf("the second turn, retried once the first ended: %d %s", r.status, r.body)
	}
	if cap <= 0 || heldModelPrompt+cap > 1000-spent {
		t.Fatalf("the retried turn was capped at %d tokens with %d of 1,000 spent", cap, spent)
	}
	if total, _, _, turns := spentOn(t, url, "R1"); total > 1000 || turns != 0 {
		t.Fatalf("the two turns spent %d tokens of a 1,000-token budget (%d holds left)", total, turns)
	}
}

// An instance killed (SIGKILL) while its model turn holds 600 of a
// request's 1,000 tokens leaves its hold on the shared ledger: it counts
// for nothing once that life's heartbeat is older than instance_ttl, and
// the next hold on the request deletes it. A turn of the same request on
// the other instance, which waits for it meanwhile, then passes with the
// cap it asked for.
func TestHolds24KilledInstanceHoldIsFreedByTTL(t *testing.T) {
	m := newHeldModel(t)
	base, cmd, url := holdsFleet(t, m, "{tokens: 1000}", [2]string{"timeout: 1m", "timeout: 1m"})
	// b runs a turn of the request too, so that the request goes on
	// there once a is dead.
	onB := sendTurn(base[1], "R2", 50)
	if cap := <-m.arrived; cap != 50 {
		t.Fatalf("b's first turn reached the model capped at %d, want 50", cap)
	}
	onA := sendTurn(base[0], "R2", 600)
	if cap := <-m.arrived; cap != 600 {
		t.Fatalf("a's turn reached the model capped at %d, want 600", cap)
	}
	cmd[0].Process.Kill()
	cmd[0].Wait()
	if r := <-onA; r.status != 0 {
		t.Fatalf("a's turn answered %d after a was killed", r.status)
	}
	if _, _, held, turns := spentOn(t, url, "R2"); turns != 2 || held < 600+50 {
		t.Fatalf("after a was killed, %d tokens held by %d turns, want b's and a's (at least 650)", held, turns)
	}
	next := sendTurn(base[1], "R2", 600)
	var cap int64
	select {
	case cap = <-m.arrived:
	case r := <-next:
		t.Fatalf("b's second turn, while the killed a's hold was on the ledger: %d %s, want it to wait until a's hold counts for nothing", r.status, r.body)
	}
	spent, _, _, _ := spentOn(t, url, "R2")
	if cap != 600 {
		t.Fatalf("b's second turn reached the model capped at %d, want the 600 it asked", cap)
	}
	m.open()
	for _, c := range []<-chan turnResult{onB, next} {
		if r := <-c; r.status != http.StatusOK {
			t.Fatalf("a turn on b: %d %s", r.status, r.body)
		}
	}
	total, _, held, turns := spentOn(t, url, "R2")
	if total > 1000 || turns != 0 {
		t.Fatalf("the request spent %d tokens of 1,000 (%d before the last turns were charged), and %d are held by %d turns, want none", total, spent, held, turns)
	}
}

// The same two turns on two instances under a cost budget of 1 with the
// model priced at 1,000 a million tokens (0.001 a token, prompt and
// answer): a cost budget capped no answer, and the two spent 1.22. The
// second turn waits for the first's hold (its cap's cost) and is refused
// 503 budget_tokens_held; its retry is capped at what the cost left pays.
func TestHolds24TurnsOnTwoInstancesKeepTheCostBudget(t *testing.T) {
	m := newHeldModel(t)
	prices := "prices: {m: {input: 1000, output: 1000}}"
	base, _, url := holdsFleet(t, m, "{cost: 1}", [2]string{"timeout: 1m, " + prices, "timeout: 2s, " + prices})
	first := sendTurn(base[0], "R3", 600)
	if cap := <-m.arrived; cap != 600 {
		t.Fatalf("the first turn reached the model capped at %d, want the 600 it asked", cap)
	}
	second := sendTurn(base[1], "R3", 600)
	var r2 turnResult
	select {
	case cap := <-m.arrived:
		m.open()
		<-first
		<-second
		_, cost, _, _ := spentOn(t, url, "R3")
		t.Fatalf("the second turn reached the model (capped at %d) while the first held 0.6 of the cost budget of 1: the two spent %.3f",
			cap, float64(cost)/1e9)
	case r2 = <-second:
	}
	if r2.status != http.StatusServiceUnavailable || !strings.Contains(r2.body, "budget_tokens_held") {
		t.Fatalf("the second turn, while the first held its cap's cost on the other instance: %d %s, want 503 budget_tokens_held", r2.status, r2.body)
	}
	m.open()
	if r1 := <-first; r1.status != http.StatusOK {
		t.Fatalf("the first turn: %d %s", r1.status, r1.body)
	}
	_, spent, _, _ := spentOn(t, url, "R3")
	again := sendTurn(base[1], "R3", 600)
	cap := <-m.arrived
	if r := <-again; r.status != http.StatusOK {
		t.Fatalf("the second turn, retried once the first ended: %d %s", r.status, r.body)
	}
	if left := (1e9 - spent) / 1e6; cap <= 0 || heldModelPrompt+cap > left {
		t.Fatalf("the retried turn was capped at %d tokens with %.3f of 1 spent (%d tokens paid for)", cap, float64(spent)/1e9, left)
	}
	if _, total, _, turns := spentOn(t, url, "R3"); total > 1e9 || turns != 0 {
		t.Fatalf("the two turns spent %.3f of a cost budget of 1 (%d holds left)", float64(total)/1e9, turns)
	}
}
