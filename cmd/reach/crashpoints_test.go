package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// crashRun is one gateway's life in TestCrashAtEveryDurablePoint, and what
// its test needs to drive and check it.
type crashRun struct {
	base, data string
	store      string // the PostgreSQL database's URL, if not SQLite's in data
	fx         *sideEffects
	driven     atomic.Int32 // the requests a life of commitCases drove

	mu    sync.Mutex
	notes []string // what a drive saw go wrong (note)
}

// book is an envelope of one travel__book call: in request (none if ""),
// under key (the call id's if ""), of chain and step.
func book(request, key string, chain, step int) string {
	rid, k := "", ""
	if request != "" {
		rid = fmt.Sprintf(`"request_id":%q,`, request)
	}
	if key != "" {
		k = fmt.Sprintf(`"idempotency_key":%q,`, key)
	}
	return fmt.Sprintf(`{%s"tool_calls":[{"call_id":"b%d-%d","tool":"travel__book",%s"arguments":{"chain":%d,"step":%d}}]}`,
		rid, chain, step, k, chain, step)
}

// closeAccount is an envelope of the high-risk travel__close under key, in
// request (none if "").
func closeAccount(request, key string) string {
	rid := ""
	if request != "" {
		rid = fmt.Sprintf(`"request_id":%q,`, request)
	}
	return fmt.Sprintf(`{%s"tool_calls":[{"call_id":"x","tool":"travel__close","idempotency_key":%q,"arguments":{}}]}`, rid, key)
}

var approvalID = regexp.MustCompile(`apr_[0-9a-f]+`)

// ask calls travel__close under key and returns the id of the approval it
// waits for.
func (h *crashRun) ask(t *testing.T, request, key string) string {
	t.Helper()
	res := call(t, h.base, closeAccount(request, key))
	id := ""
	if res.Error != nil {
		id = approvalID.FindString(res.Error.Message)
	}
	if res.Status != "pending" || id == "" {
		t.Fatalf("travel__close under %s got %+v; want it pending, naming its approval", key, res)
	}
	return id
}

func (h *crashRun) post(path, body string) {
	c := &http.Client{Timeout: time.Minute}
	if resp, err := c.Post(h.base+path, "application/json", strings.NewReader(body)); err == nil {
		resp.Body.Close()
	}
}

// state is the request id's state as GET /v1/requests/{id} shows it.
func (h *crashRun) state(t *testing.T, id string) string {
	t.Helper()
	status, body := get(t, h.base+"/v1/requests/"+id)
	var r struct{ State string }
	if status != 200 || json.Unmarshal([]byte(body), &r) != nil {
		t.Fatalf("GET /v1/requests/%s: %d %s", id, status, body)
	}
	return r.State
}

// approval is the status of approval id as GET /v1/approvals/{id} shows it.
func (h *crashRun) approval(t *testing.T, id string) string {
	t.Helper()
	status, body := get(t, h.base+"/v1/approvals/"+id)
	var a struct{ Status string }
	if status != 200 || json.Unmarshal([]byte(body), &a) != nil {
		t.Fatalf("GET /v1/approvals/%s: %d %s", id, status, body)
	}
	return a.Status
}

// deadLetters are the ids and states of the dead letters the gateway lists.
func (h *crashRun) deadLetters(t *testing.T) map[string]string {
	t.Helper()
	var dl struct{ Deadletters []struct{ ID, State string } }
	if status, body := get(t, h.base+"/v1/deadletters"); status != 200 || json.Unmarshal([]byte(body), &dl) != nil {
		t.Fatalf("dead letters: %d %s", status, body)
	}
	out := map[string]string{}
	for _, d := range dl.Deadletters {
		out[d.ID] = d.State
	}
	return out
}

// deadLetter waits for a dead letter to be listed (a stop's undos run
// after the stop is answered), a minute at most, and returns the list.
// (It waited 1000 looks, some 5 s, which a loaded race build can spend
// before its undo's attempt fails; then the dead letter's action was
// never taken and its crash point never reached.)
func (h *crashRun) deadLetter(t *testing.T) map[string]string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if dl := h.deadLetters(t); len(dl) > 0 {
			return dl
		}
	}
	t.Errorf("no dead letter came within a minute of the stop")
	return nil
}

// counts reads one of the upstream's counts under its lock.
func (h *crashRun) counts(f func(fx *sideEffects) int) int {
	h.fx.mu.Lock()
	defer h.fx.mu.Unlock()
	return f(h.fx)
}

// TestCrashAtEveryDurablePoint kills a real `reach serve` (kill -9) right
// after each durable write of docs/STATE.md ("Crash points") other than a
// call's own three (TestCrashAtDurablePoints), and once inside SQLite's
// transaction, between a batch's statements and its COMMIT; then restarts
// it over the same data and checks what that table says the kill leaves.
// A point that recovery reaches (recovery.*) is armed in a second life,
// after a first one killed with work to recover, and checked in a third.
// After every restart, besides each case's own checks:
//
//   - no booking, and no undo, ran twice for one idempotency key or leg;
//   - no request is left running: the request list (GET /v1/requests and
//     `reach requests`) shows each request of the dead lives final;
//   - `reach audit verify` passes;
//   - the store keeps no idempotency claim once the gateway stopped.
func TestCrashAtEveryDurablePoint(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	runs(t, nil, durablePoints())
}

// TestCrashAtEveryDurablePointOnPostgres is TestCrashAtEveryDurablePoint
// with the store in PostgreSQL (one instance, restarted under its name),
// which recovers the work of its earlier lives once their heartbeats are
// older than instance_ttl (1s here), not at its start: each case's checks
// wait for that. A root request's request.begun is its join in the store
// (the cluster's recorder). Not here: claimed#4 (on
// several instances a claim commits before its checkpoint, row "1 and 2"
// of docs/STATE.md: the undo cut off there runs at the recovery, once);
// deadletter.taken (one taken is opened again after a while, since
// another instance may hold it).
func TestCrashAtEveryDurablePointOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	var cases []durablePoint
	for _, tc := range durablePoints() {
		switch tc.point {
		case "claimed#4", "deadletter.taken", "model.answered": // the last: ledgerPoints' own
		default:
			cases = append(cases, tc)
		}
	}
	cases = append(cases, ledgerPoints()...)
	pg := pgtest.Own(t)
	n := 0
	runs(t, func(t *testing.T) string {
		n++
		url, err := pg.CreateDatabase(t.Context(), fmt.Sprint("crash", n))
		if err != nil {
			t.Fatal(err)
		}
		return url
	}, cases)
}

// ledgerPoints are the cases of TestCrashAtEveryDurablePointOnPostgres
// at the writes of the shared ledger (on one SQLite gateway budgets are
// in memory, and a restart interrupts every request that spent them):
// what a request spent before the kill is spent after the restart, the
// request interrupted; nothing gives it its budget back.
func ledgerPoints() []durablePoint {
	return []durablePoint{
		{
			// The second call of r admitted (its tool call debited), not
			// run: both calls stay spent.
			point: "budget.admitted#2",
			more:  "budgets:\n  default: {tool_calls: 5}\n",
			drive: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, book("r", "k1", 1, 1)); res.Status != "success" {
					t.Fatalf("booking: %+v", res)
				}
				h.post("/v1/calls", book("r", "k2", 1, 2))
			},
			check: func(t *testing.T, h *crashRun) {
				h.spent(t, "r", store.Spend{ToolCalls: 2})
				if n := h.counts(func(fx *sideEffects) int { return fx.legs["1/2"] }); n != 0 {
					t.Errorf("the call cut off at its admission was booked %d times; want 0", n)
				}
				h.undoneOnce(t, "r", "k1")
			},
		},
		{
			// A model turn of r admitted (its turn debited), its answer
			// not asked for yet.
			point: "budget.admitted",
			model: true,
			more:  "budgets:\n  default: {tokens: 10000}\n",
			drive: func(t *testing.T, h *crashRun) { h.turn(t, "r") },
			check: func(t *testing.T, h *crashRun) { h.spent(t, "r", store.Spend{Turns: 1}) },
		},
		{
			// The turn's answer passed on, its frame not ended yet: its
			// tokens were charged before the answer's end was passed on,
			// and stay spent (they were lost here, the prompt only spent).
			point: "model.answered",
			model: true,
			more:  "budgets:\n  default: {tokens: 10000}\n",
			drive: func(t *testing.T, h *crashRun) { h.turn(t, "r") },
			check: func(t *testing.T, h *crashRun) {
				h.spent(t, "r", store.Spend{Turns: 1, Tokens: fakeModelTokens})
				h.turnInterrupted(t, "r")
			},
		},
		{
			// The same through a stream: charged before its [DONE] passed
			// ("#1": a subtest name of its own).
			point: "model.answered#1",
			model: true,
			more:  "budgets:\n  default: {tokens: 10000}\n",
			drive: func(t *testing.T, h *crashRun) {
				h.turnBody(t, "r", `{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`)
			},
			check: func(t *testing.T, h *crashRun) {
				h.spent(t, "r", store.Spend{Turns: 1, Tokens: fakeModelTokens})
				h.turnInterrupted(t, "r")
			},
		},
		{
			// The turn's hold taken on the shared ledger (its prompt
			// debited with it), the model not asked yet: the prompt stays
			// spent, and the dead life's hold is let go once its life is
			// recovered (Forget): it blocks no later turn.
			point: "budget.charged#1",
			model: true,
			more:  "budgets:\n  default: {tokens: 10000}\n",
			drive: func(t *testing.T, h *crashRun) { h.turn(t, "r") },
			check: func(t *testing.T, h *crashRun) {
				sp := h.spentNow(t, "r")
				if sp.Turns != 1 || sp.Tokens <= 0 || sp.Tokens >= fakeModelTokens {
					t.Errorf("request r has spent %+v after the restart; want its one turn and its prompt's tokens (more than none, less than the answer's %d): what it spent before the kill", sp, fakeModelTokens)
				}
				h.letGo(t, "r")
				h.turnInterrupted(t, "r")
			},
		},
		{
			// The turn's tokens debited after its answer (the second
			// debit: the first held its prompt): spent.
			point: "budget.charged#2",
			model: true,
			more:  "budgets:\n  default: {tokens: 10000}\n",
			drive: func(t *testing.T, h *crashRun) { h.turn(t, "r") },
			check: func(t *testing.T, h *crashRun) {
				h.spent(t, "r", store.Spend{Turns: 1, Tokens: fakeModelTokens})
				h.letGo(t, "r")
				h.turnInterrupted(t, "r")
			},
		},
		{
			// The turn charged and its hold let go, its answer not passed
			// on yet: every token spent once, nothing held.
			point: "budget.unheld",
			model: true,
			more:  "budgets:\n  default: {tokens: 10000}\n",
			drive: func(t *testing.T, h *crashRun) { h.turn(t, "r") },
			check: func(t *testing.T, h *crashRun) {
				h.spent(t, "r", store.Spend{Turns: 1, Tokens: fakeModelTokens})
				h.letGo(t, "r")
				h.turnInterrupted(t, "r")
			},
		},
	}
}

// fakeModelTokens is what every answer of fakeModel says it used.
const fakeModelTokens = 150

// fakeModel serves an OpenAI-style chat completion on loopback, each
// answer using fakeModelTokens (streamed when asked, its usage in a chunk
// of its own before [DONE]), and returns its base URL.
func fakeModel(t *testing.T) string {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var asked struct{ Stream bool }
		if json.Unmarshal(b, &asked); asked.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`+"\n\n")
			io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150}}`+"\n\n")
			io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150}}`)
	}))
	t.Cleanup(up.Close)
	return up.URL
}

// turn asks the model route for one turn in request.
func (h *crashRun) turn(t *testing.T, request string) { h.turnStatus(t, request) }

// turnStatus asks the model route for one turn in request, and returns
// the answer's status and body (0 if the gateway was killed meanwhile).
func (h *crashRun) turnStatus(t *testing.T, request string) (int, string) {
	return h.turnBody(t, request, `{"model":"m","messages":[{"role":"user","content":"go"}]}`)
}

// turnBody asks the model route for the turn body in request, and returns
// the answer's status and body (0 if the gateway was killed meanwhile).
func (h *crashRun) turnBody(t *testing.T, request, body string) (int, string) {
	req, _ := http.NewRequest("POST", h.base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Reach-Request", request)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// turnInterrupted checks that request is interrupted, and that a turn
// naming it is refused so.
func (h *crashRun) turnInterrupted(t *testing.T, request string) {
	t.Helper()
	if s := h.state(t, request); s != "interrupted" {
		t.Errorf("request %s is %s; want interrupted", request, s)
	}
	if status, body := h.turnStatus(t, request); status != http.StatusForbidden || !strings.Contains(body, "request_interrupted") {
		t.Errorf("a turn of %s after the restart: %d %s; want 403 request_interrupted", request, status, body)
	}
}

// spent checks that request has spent want on the shared ledger.
func (h *crashRun) spent(t *testing.T, request string, want store.Spend) {
	t.Helper()
	st, err := postgres.Open(t.Context(), h.store, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if sp, err := st.Spent(t.Context(), request); err != nil || sp != want {
		t.Errorf("request %s has spent %+v (%v) after the restart; want %+v, what it spent before the kill", request, sp, err, want)
	}
}

// spentNow is what request has spent on the shared ledger.
func (h *crashRun) spentNow(t *testing.T, request string) store.Spend {
	t.Helper()
	st, err := postgres.Open(t.Context(), h.store, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sp, err := st.Spent(t.Context(), request)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// letGo waits until no model turn holds anything on request's shared
// ledger: a live turn let go of its hold, and a dead life's hold went
// with the life once its work was recovered (Forget), which comes after
// the recovery that recovered waits for.
func (h *crashRun) letGo(t *testing.T, request string) {
	t.Helper()
	st, err := postgres.Open(t.Context(), h.store, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var held store.Spend
	var turns int
	for range 600 {
		if held, turns, err = st.Holds(t.Context(), request); err == nil && turns == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("request %s: %d model turns still hold %+v on its shared ledger (%v) 30 s after its lives' work was recovered; want every hold let go", request, turns, held, err)
}

// durablePoint is a case of TestCrashAtEveryDurablePoint.
type durablePoint = struct {
	point string
	// recovery: the point is reached by the recovery of a second life,
	// after drive ran in a first one that was killed.
	recovery bool
	first    string                          // where the first life is killed, if not once drive returned
	more     string                          // configuration after the tools'
	model    bool                            // a model endpoint behind the model route (fakeModel)
	drive    func(t *testing.T, h *crashRun) // cut off by the kill at point
	check    func(t *testing.T, h *crashRun) // after the restart
}

// durablePoints are the cases of TestCrashAtEveryDurablePoint.
func durablePoints() []durablePoint {
	return append(append(append(pointCases(), stopEndCases()...), commitCases("commit", 2, 9, 1)...), commitCases("batch.held", 1, 4, parallelCommitChains)...)
}

// commitCases kill inside the writer's transaction, its statements run,
// before COMMIT, at its Nth batch in a life that books four legs (each
// with an undo) in request r and ends it: none of the batch is kept, and
// the restart makes of r what a kill at the write before it would. r is
// completed, nothing undone; or interrupted, each leg booked undone once.
//
// How many batches a life commits depends on timing (a call's queued end
// rides the next claim's commit, or commits on its own when the gather
// ends first; a slow start may refuse the first calls): the life goes on
// with requests r2, r3, ... (chains 2, 3, ...) the same way until the
// Nth commit comes, and each request it drove is checked as r is.
//
// At "batch.held" the kill comes while the writer holds its Nth batch
// open, a write just joined, its callers waiting on the commit (on
// SQLite, held for the calls in flight before it begins: the requests
// are driven all at once, parallel at a time; on PostgreSQL, held for a
// claim's checkpoint): the same, none of the batch kept. Whether a write
// joins a held batch depends on the scheduling: the life armed there
// holds its batches longer (heldWindows), and the drive goes on, round
// after round of new requests, until the point comes or maxCommitChains
// requests were driven: bounded by a count, not by a time.
func commitCases(point string, from, to, parallel int) []durablePoint {
	var cases []durablePoint
	for n := from; n <= to; n++ {
		cases = append(cases, durablePoint{
			point: fmt.Sprint(point, "#", n),
			drive: func(t *testing.T, h *crashRun) {
				if !h.toolsServed() {
					return // killed at the point, or the kill's wait fails
				}
				// chainRun drives the request of chain, and reports
				// whether the gateway answered throughout.
				chainRun := func(chain int) bool {
					id := commitRequest(chain)
					for step := 1; step <= 4; step++ {
						res, ok := tryCall(h.base, book(id, fmt.Sprintf("k%d-%d", chain, step), chain, step))
						if !ok {
							return false // killed at the point
						}
						if res.Status != "success" {
							h.note(fmt.Sprintf("the booking of leg %d/%d got %+v", chain, step, res))
						}
					}
					return h.tryPost("/v1/requests/"+id+"/end", "")
				}
				var wg sync.WaitGroup
				var killed atomic.Bool
				for i := 1; i <= maxCommitChains; i += parallel {
					last := min(i+parallel-1, maxCommitChains)
					h.driven.Store(int32(last))
					for j := i; j <= last; j++ {
						wg.Go(func() {
							if !chainRun(commitChain(j)) {
								killed.Store(true)
							}
						})
					}
					wg.Wait()
					if killed.Load() {
						return
					}
				}
				h.note(fmt.Sprintf("all %d requests driven, the point not reached", maxCommitChains))
			},
			check: func(t *testing.T, h *crashRun) {
				// None if the point came before the gateway served (its
				// pins): the common checks hold then.
				for i := 1; i <= int(h.driven.Load()); i++ {
					h.checkCommitRequest(t, commitChain(i))
				}
			},
		})
	}
	return cases
}

// maxCommitChains bounds the requests a life of commitCases drives (each
// commits at least twice a leg), and parallelCommitChains is how many of
// them "batch.held" drives at a time.
const (
	maxCommitChains      = 64
	parallelCommitChains = 8
)

// commitChain is the chain of the ith request a life of commitCases
// drives: 1, 2, ..., 8, 10, 11, ... (chain 9's undo fails, in runs: a
// request interrupted there would keep a leg not undone).
func commitChain(i int) int {
	if i < 9 {
		return i
	}
	return i + 1
}

// commitRequest is the id of the request of chain in commitCases: r, r2,
// r3, ...
func commitRequest(chain int) string {
	if chain == 1 {
		return "r"
	}
	return fmt.Sprint("r", chain)
}

// checkCommitRequest checks, after the restart, the request of chain that
// a life of commitCases drove: never begun, nothing of it booked (its
// begin was in the batch the kill cut off); completed, nothing of it
// undone; or interrupted, each leg booked undone once, or cut off.
func (h *crashRun) checkCommitRequest(t *testing.T, chain int) {
	t.Helper()
	id := commitRequest(chain)
	status, body := get(t, h.base+"/v1/requests/"+id)
	var r struct {
		State  string
		Frames []struct {
			CallID string `json:"call_id"`
			Status string
			Error  *struct{ Code string }
		}
	}
	json.Unmarshal([]byte(body), &r)
	cutOff := map[string]bool{} // legs whose checkpoint says they may have run
	for _, f := range r.Frames {
		if f.Status == "cancelled" && f.Error != nil && f.Error.Code == "interrupted" {
			cutOff[f.CallID] = true
		}
	}
	h.fx.mu.Lock()
	defer h.fx.mu.Unlock()
	for step := 1; step <= 4; step++ {
		leg := fmt.Sprint(chain, "/", step)
		booked, undone := h.fx.legs[leg], h.fx.undone[leg]
		switch {
		case status == 404 && booked == 0: // its begin was in the batch: nothing of it ran
		case r.State == "completed" && undone != 0:
			t.Errorf("leg %s of the completed request %s undone %d times", leg, id, undone)
		case r.State == "interrupted" && booked == 1 && undone != 1 && !cutOff[fmt.Sprintf("b%d-%d", chain, step)]:
			// Its end rolled back with the batch, it is cut off:
			// it may have run, and nothing undoes it (docs/STATE.md,
			// "2 and 4").
			t.Errorf("leg %s of the interrupted request %s booked, undone %d times, not cut off; want it undone once", leg, id, undone)
		case r.State != "completed" && r.State != "interrupted":
			t.Errorf("request %s is %q (%d) after the restart; want completed or interrupted", id, r.State, status)
		}
	}
}

// toolsServed waits until the gateway lists travel__book (a gateway that
// could not reach its upstream at its start serves without its tools
// until it does), for at most a minute, and reports whether it did.
func (h *crashRun) toolsServed() bool {
	c := &http.Client{Timeout: time.Minute}
	for range 1200 {
		resp, err := c.Get(h.base + "/v1/tools")
		if err != nil {
			return false // killed
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && strings.Contains(string(b), `"travel__book"`) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.note("travel__book was not served within a minute")
	return false
}

// note keeps what a drive saw that did not go as it should (a call
// refused), for the failure that follows, if one does.
func (h *crashRun) note(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.notes) < 20 {
		h.notes = append(h.notes, s)
	}
}

// tryPost posts body to path and reports whether the gateway answered
// (false once it was killed).
func (h *crashRun) tryPost(path, body string) bool {
	c := &http.Client{Timeout: time.Minute}
	resp, err := c.Post(h.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return true
}

// pointCases are the cases of TestCrashAtEveryDurablePoint at the points
// after a write.
func pointCases() []durablePoint {
	return []durablePoint{
		{
			// The request is durable before its first claim: it is
			// interrupted, and its call never ran.
			point: "request.begun",
			drive: func(t *testing.T, h *crashRun) { h.post("/v1/calls", book("r", "k1", 1, 1)) },
			check: func(t *testing.T, h *crashRun) {
				if s := h.state(t, "r"); s != "interrupted" {
					t.Errorf("request r is %s; want interrupted", s)
				}
				if res := call(t, h.base, book("", "k1", 1, 1)); res.Status != "success" || res.Replayed {
					t.Errorf("the retry of k1 got %+v; want it to run (it never started)", res)
				}
				if n := h.counts(func(fx *sideEffects) int { return fx.booked[toolKey("travel__book", "k1")] }); n != 1 {
					t.Errorf("k1 booked %d times; want 1", n)
				}
			},
		},
		{
			// The stop is durable before its undos run: the restart runs
			// them, and the request stays stopped.
			point: "request.stopped",
			drive: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, book("r", "k1", 1, 1)); res.Status != "success" {
					t.Fatalf("booking: %+v", res)
				}
				h.post("/v1/requests/r/cancel", `{"reason":"enough"}`)
			},
			check: func(t *testing.T, h *crashRun) {
				if s := h.state(t, "r"); !strings.HasPrefix(s, "stopped") {
					t.Errorf("request r is %s; want it stopped", s)
				}
				if res := call(t, h.base, book("r", "k2", 1, 2)); res.Error == nil || !strings.HasPrefix(res.Error.Code, "stopped") {
					t.Errorf("a call in the stopped request got %+v; want it refused as stopped", res)
				}
				if n := h.counts(func(fx *sideEffects) int { return fx.undone["1/1"] }); n != 1 {
					t.Errorf("the booking of the stopped request was undone %d times; want 1", n)
				}
			},
		},
		{
			// The end is durable when the client is answered: nothing of
			// the request is undone.
			point: "request.ended",
			drive: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, book("r", "k1", 1, 1)); res.Status != "success" {
					t.Fatalf("booking: %+v", res)
				}
				h.post("/v1/requests/r/end", "")
			},
			check: func(t *testing.T, h *crashRun) {
				if s := h.state(t, "r"); s != "completed" {
					t.Errorf("request r is %s; want completed", s)
				}
				if res := call(t, h.base, book("", "k1", 1, 1)); res.Status != "success" || !res.Replayed {
					t.Errorf("the retry of k1 got %+v %+v; want its recorded result", res, res.Error)
				}
				if n := h.counts(func(fx *sideEffects) int { return fx.undone["1/1"] }); n != 0 {
					t.Errorf("the booking of the ended request was undone %d times", n)
				}
			},
		},
		{
			// A new approval is durable before the call is answered
			// pending: the restart keeps it pending, and approved, the
			// call runs once.
			point: "approval.pending",
			drive: func(t *testing.T, h *crashRun) { h.post("/v1/calls", closeAccount("r", "c1")) },
			check: func(t *testing.T, h *crashRun) {
				id := h.ask(t, "", "c1")
				if s := h.approval(t, id); s != "pending" {
					t.Errorf("approval %s is %s; want pending", id, s)
				}
				h.approveAndRun(t, id, "c1")
			},
		},
		{
			point: "approval.approved",
			drive: func(t *testing.T, h *crashRun) {
				id := h.ask(t, "r", "c1")
				h.post("/v1/approvals/"+id+"/approve", `{"reason":"fine"}`)
			},
			check: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, closeAccount("", "c1")); res.Status != "success" {
					t.Errorf("the approved call, repeated, got %+v; want it to run", res)
				}
				h.ranOnce(t, "c1")
			},
		},
		{
			// The approval is used before its call runs: the call's
			// repetition still runs it, once.
			point: "approval.used",
			drive: func(t *testing.T, h *crashRun) {
				id := h.ask(t, "r", "c1")
				if status, out := postJSON(t, h.base+"/v1/approvals/"+id+"/approve", `{"reason":"fine"}`); status != 200 {
					t.Fatalf("approve: %d %v", status, out)
				}
				h.post("/v1/calls", closeAccount("r", "c1"))
			},
			check: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, closeAccount("", "c1")); res.Status != "success" {
					t.Errorf("the approved call, repeated, got %+v; want it to run", res)
				}
				h.ranOnce(t, "c1")
			},
		},
		{
			point: "approval.denied",
			drive: func(t *testing.T, h *crashRun) {
				id := h.ask(t, "r", "c1")
				h.post("/v1/approvals/"+id+"/deny", `{"reason":"no"}`)
			},
			check: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, closeAccount("", "c1")); res.Status == "success" || res.Status == "pending" {
					t.Errorf("the denied call, repeated, got %+v; want it refused", res)
				}
				if n := h.counts(func(fx *sideEffects) int { return len(fx.closed) }); n != 0 {
					t.Errorf("the denied call ran %d times", n)
				}
			},
		},
		{
			// Nobody decided in time: the expiry is durable; the call,
			// repeated, asks anew and does not run.
			point: "approval.expired",
			more:  "approvals: {ttl: 200ms}\n",
			drive: func(t *testing.T, h *crashRun) {
				h.ask(t, "r", "c1")
				time.Sleep(300 * time.Millisecond) // past its time: the next look expires it
				if resp, err := http.Get(h.base + "/v1/approvals"); err == nil {
					resp.Body.Close()
				}
			},
			check: func(t *testing.T, h *crashRun) {
				status, body := get(t, h.base+"/v1/approvals?status=expired")
				var list struct{ Approvals []struct{ ID string } }
				if status != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list.Approvals) != 1 {
					t.Errorf("expired approvals after the restart: %d %s; want the one", status, body)
				}
				// The call, repeated, asks anew: another approval, pending
				// until its own 200ms pass (on a loaded machine they may
				// have passed by the time it is read: expired is as good).
				if id := h.ask(t, "", "c1"); len(list.Approvals) == 1 && id == list.Approvals[0].ID {
					t.Errorf("the call, repeated, waits for the expired approval %s; want a new one", id)
				} else if st := h.approval(t, id); st != "pending" && st != "expired" {
					t.Errorf("the call, repeated, waits for %s, %s; want it pending (or expired since)", id, st)
				}
				if n := h.counts(func(fx *sideEffects) int { return len(fx.closed) }); n != 0 {
					t.Errorf("the call whose approval expired ran %d times", n)
				}
			},
		},
		{
			// The tools' pins are durable (pinned together, in one
			// write): the restart finds them pinned, and serves every
			// tool, none held.
			point: "pin.stored",
			drive: func(t *testing.T, h *crashRun) {},
			check: func(t *testing.T, h *crashRun) {
				status, body := get(t, h.base+"/v1/tools")
				for _, tool := range []string{"travel__book", "travel__unbook", "travel__close"} {
					if status != 200 || !strings.Contains(body, `"`+tool+`"`) {
						t.Errorf("GET /v1/tools after the restart lacks %s: %d %s", tool, status, body)
					}
				}
				if res := call(t, h.base, book("", "k1", 1, 1)); res.Status != "success" {
					t.Errorf("a booking after the restart got %+v", res)
				}
			},
		},
		{
			// A failed undo is dead-lettered before anything else: the
			// restart does not run it again, the dead letter stays open.
			point: "deadletter.added",
			drive: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, book("r", "k9", 9, 1)); res.Status != "success" {
					t.Fatalf("booking: %+v", res)
				}
				h.post("/v1/requests/r/cancel", `{"reason":"enough"}`)
			},
			check: func(t *testing.T, h *crashRun) {
				if dl := h.deadLetters(t); len(dl) != 1 {
					t.Errorf("dead letters after the restart: %v; want the one undo", dl)
				}
				if s := h.state(t, "r"); !strings.HasPrefix(s, "stopped") {
					t.Errorf("request r is %s; want it stopped", s)
				}
			},
		},
		{
			// An operator's retry takes the dead letter; the kill cuts it
			// short: the restart opens it again.
			point: "deadletter.taken",
			drive: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, book("r", "k9", 9, 1)); res.Status != "success" {
					t.Fatalf("booking: %+v", res)
				}
				h.post("/v1/requests/r/cancel", `{"reason":"enough"}`)
				for id := range h.deadLetter(t) {
					h.post("/v1/deadletters/"+id+"/retry", "")
				}
			},
			check: func(t *testing.T, h *crashRun) {
				dl := h.deadLetters(t)
				if len(dl) != 1 {
					t.Errorf("dead letters after the restart: %v; want the one undo", dl)
				}
				for id, s := range dl {
					if s != "open" {
						t.Errorf("dead letter %s is %s; want it open again", id, s)
					}
				}
			},
		},
		{
			// An operator dismisses the dead letter: the dismissal is
			// durable before it is answered.
			point: "deadletter.settled",
			drive: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, book("r", "k9", 9, 1)); res.Status != "success" {
					t.Fatalf("booking: %+v", res)
				}
				h.post("/v1/requests/r/cancel", `{"reason":"enough"}`)
				for id := range h.deadLetter(t) {
					h.post("/v1/deadletters/"+id+"/dismiss", `{"note":"refunded by hand"}`)
				}
			},
			check: func(t *testing.T, h *crashRun) {
				if dl := h.deadLetters(t); len(dl) != 0 {
					t.Errorf("open dead letters after the restart: %v; want none (dismissed)", dl)
				}
			},
		},
		{
			// A stop's compensation cut off mid-way: the undo of the newer
			// leg is durable as executing (it may have run). The restart
			// runs the older leg's undo and does not run the newer one's
			// again: it is dead-lettered for an operator.
			point: "executing#3",
			drive: func(t *testing.T, h *crashRun) {
				for step := 1; step <= 2; step++ {
					if res := call(t, h.base, book("r", fmt.Sprint("k", step), 1, step)); res.Status != "success" {
						t.Fatalf("booking: %+v", res)
					}
				}
				h.post("/v1/requests/r/cancel", `{"reason":"enough"}`)
			},
			check: func(t *testing.T, h *crashRun) {
				if s := h.state(t, "r"); !strings.HasPrefix(s, "stopped") {
					t.Errorf("request r is %s; want it stopped", s)
				}
				if n := h.counts(func(fx *sideEffects) int { return fx.undone["1/1"] }); n != 1 {
					t.Errorf("the older leg was undone %d times; want 1", n)
				}
				if n := h.counts(func(fx *sideEffects) int { return fx.undone["1/2"] }); n != 0 {
					t.Errorf("the newer leg, whose undo was cut off, was undone %d times; want 0", n)
				}
				if dl := h.deadLetters(t); len(dl) != 1 {
					t.Errorf("dead letters: %v; want the newer leg's undo", dl)
				}
			},
		},
		{
			// The same one step later: the newer leg's undo done, the
			// older one's claimed (with its executing checkpoint, one
			// write). The newer is not undone again; the older, which may
			// have run, is dead-lettered.
			point: "claimed#4",
			drive: func(t *testing.T, h *crashRun) {
				for step := 1; step <= 2; step++ {
					if res := call(t, h.base, book("r", fmt.Sprint("k", step), 1, step)); res.Status != "success" {
						t.Fatalf("booking: %+v", res)
					}
				}
				h.post("/v1/requests/r/cancel", `{"reason":"enough"}`)
			},
			check: func(t *testing.T, h *crashRun) {
				if n := h.counts(func(fx *sideEffects) int { return fx.undone["1/2"] }); n != 1 {
					t.Errorf("the newer leg was undone %d times; want 1", n)
				}
				if n := h.counts(func(fx *sideEffects) int { return fx.undone["1/1"] }); n != 0 {
					t.Errorf("the older leg, whose undo was cut off, was undone %d times; want 0", n)
				}
				if dl := h.deadLetters(t); len(dl) != 1 {
					t.Errorf("dead letters: %v; want the older leg's undo", dl)
				}
			},
		},
		{
			// A request stopped, its undos not run, and the next life
			// killed once its recovery ran them: it stays stopped, and
			// nothing is undone twice.
			point:    "recovery.stopped",
			recovery: true,
			drive: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, book("r", "k1", 1, 1)); res.Status != "success" {
					t.Fatalf("booking: %+v", res)
				}
				h.post("/v1/requests/r/cancel", `{"reason":"enough"}`)
			},
			first: "request.stopped", // its undo not run
			check: func(t *testing.T, h *crashRun) {
				if n := h.counts(func(fx *sideEffects) int { return fx.undone["1/1"] }); n != 1 {
					t.Errorf("the booking was undone %d times; want 1", n)
				}
			},
		},
		{
			// Recovery's undo ran and its key is settled; the request is
			// not stored interrupted yet: the next recovery does not run
			// the undo again.
			point:    "recovery.undone",
			recovery: true,
			drive: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, book("r", "k1", 1, 1)); res.Status != "success" {
					t.Fatalf("booking: %+v", res)
				}
			},
			check: func(t *testing.T, h *crashRun) { h.undoneOnce(t, "r", "k1") },
		},
		{
			point:    "recovery.interrupted",
			recovery: true,
			drive: func(t *testing.T, h *crashRun) {
				if res := call(t, h.base, book("r", "k1", 1, 1)); res.Status != "success" {
					t.Fatalf("booking: %+v", res)
				}
			},
			check: func(t *testing.T, h *crashRun) { h.undoneOnce(t, "r", "k1") },
		},
		{
			// A model turn's answer passed on, not charged yet: on one
			// gateway the budget is in memory, and the restart interrupts
			// the request; no turn of it runs again.
			point: "model.answered",
			model: true,
			more:  "budgets:\n  default: {tokens: 10000}\n",
			drive: func(t *testing.T, h *crashRun) { h.turn(t, "r") },
			check: func(t *testing.T, h *crashRun) { h.turnInterrupted(t, "r") },
		},
		{
			// The audit log's batch is durable (a booking's events): the
			// chain verifies after the kill (the common checks).
			point: "audit.appended",
			drive: func(t *testing.T, h *crashRun) { h.post("/v1/calls", book("r", "k1", 1, 1)) },
		},
	}
}

// runs runs cases over SQLite, or over the PostgreSQL database that pg
// makes for each (a "store:" line) if pg is not nil.
func runs(t *testing.T, pg func(t *testing.T) string, cases []durablePoint) {
	// Chain 9's undo always fails: its booking's undo is dead-lettered.
	fails := func(chain, _ int) bool { return chain == 9 }
	for _, tc := range cases {
		// A data folder's path has no '#' (the store refuses it), and
		// t.TempDir's is named after the test.
		t.Run(strings.ReplaceAll(tc.point, "#", "_"), func(t *testing.T) {
			h := &crashRun{data: t.TempDir(), fx: newSideEffects(fails)}
			head := ""
			if pg != nil {
				h.store = pg(t)
				head = "store: " + h.store + "\ninstance: a\ninstance_ttl: 1s\n"
			}
			more := tc.more
			if tc.model {
				more += "model: {base_url: '" + fakeModel(t) + "'}\n"
			}
			cfg := writeConfig(t, head+travelYAML(sideEffectsUpstream(t, h.fx), `  travel__close: {access: high_risk}
`+more))
			addr := freeAddr(t)
			h.base = "http://" + addr
			if tc.recovery {
				h.kill(t, cfg, addr, tc.first, tc.drive)
				h.kill(t, cfg, addr, tc.point, nil) // in its recovery
			} else {
				h.kill(t, cfg, addr, tc.point, tc.drive)
			}
			cmd := startReach(t, cfg, addr, h.data)
			killAtEnd(t, cmd)
			if pg != nil {
				h.recovered(t)
			}
			if tc.check != nil {
				tc.check(t, h)
			}
			h.checkAll(t, cmd)
		})
	}
}

// recovered waits until the gateway over PostgreSQL has recovered the work
// of its earlier lives, which it does once their heartbeats are older than
// instance_ttl, not at its start: no claim left, no request running or
// stopped and not ended.
func (h *crashRun) recovered(t *testing.T) {
	t.Helper()
	st, err := postgres.Open(t.Context(), h.store, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seen := ""
	for range 600 {
		claims, err := st.ClaimedKeys(t.Context())
		running, err2 := st.ListRequests(t.Context(), store.RequestFilter{State: "running"})
		stopped, err3 := st.ListRequests(t.Context(), store.RequestFilter{State: "stopped"})
		for _, r := range stopped {
			if r.Ended.IsZero() { // its undos not all run
				running = append(running, r)
			}
		}
		if err == nil && err2 == nil && err3 == nil && len(claims) == 0 && len(running) == 0 {
			return
		}
		seen = fmt.Sprintf("claims %v, requests not ended %d, errors %v %v %v", claims, len(running), err, err2, err3)
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the earlier lives' work was not recovered within 30 s: %s\n%s", seen, holders(t, h.store))
}

// holders lists, for a test's failure, the requests in the PostgreSQL
// store at url that have not ended, with the lives that hold a part of
// each, and every life with the age of its heartbeat.
func holders(t *testing.T, url string) string {
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		return err.Error()
	}
	defer conn.Close(context.Background())
	var b strings.Builder
	rows, err := conn.Query(context.Background(), `SELECT r.id, r.parent, r.state,
		COALESCE((SELECT string_agg(x.owner, ' ') FROM replicas x WHERE x.request = r.id), '')
		FROM requests r WHERE r.state = 'running' OR r.state = 'stopped' AND r.ended = 0`)
	if err != nil {
		return err.Error()
	}
	for rows.Next() {
		var id, parent, state, owners string
		if err := rows.Scan(&id, &parent, &state, &owners); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "request %s (parent %q) %s, held by [%s]\n", id, parent, state, owners)
	}
	rows.Close()
	rows, err = conn.Query(context.Background(), `SELECT owner, (reach_now() - seen) / 1000000 FROM instances`)
	if err != nil {
		return b.String() + err.Error()
	}
	for rows.Next() {
		var owner string
		var ms int64
		if err := rows.Scan(&owner, &ms); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "life %s heartbeat %d ms ago\n", owner, ms)
	}
	rows.Close()
	return b.String()
}

// kill starts a gateway over h's data armed at point, runs drive against
// it (if not nil), and kills it (kill -9) once it stops at point. With
// point "", it kills it once drive returned.
func (h *crashRun) kill(t *testing.T, cfg, addr, point string, drive func(t *testing.T, h *crashRun)) {
	t.Helper()
	if point == "" {
		cmd := startReach(t, cfg, addr, h.data)
		killAtEnd(t, cmd)
		drive(t, h)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		return
	}
	cmd, reached := startReachAt(t, cfg, addr, h.data, point)
	killAtEnd(t, cmd)
	driven := make(chan struct{})
	go func() { // cut off by the kill
		defer close(driven)
		if drive != nil {
			drive(t, h)
		}
	}()
	select {
	case <-reached:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		<-driven
		h.mu.Lock()
		defer h.mu.Unlock()
		t.Fatalf("the gateway never reached crash point %s; its drive saw: %q", point, h.notes)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	<-driven // what it had left to send found nothing listening
}

// approveAndRun approves id and repeats its call under key: it runs once.
func (h *crashRun) approveAndRun(t *testing.T, id, key string) {
	t.Helper()
	if status, out := postJSON(t, h.base+"/v1/approvals/"+id+"/approve", `{"reason":"fine"}`); status != 200 {
		t.Fatalf("approve %s: %d %v", id, status, out)
	}
	if res := call(t, h.base, closeAccount("", key)); res.Status != "success" {
		t.Errorf("the approved call, repeated, got %+v; want it to run", res)
	}
	h.ranOnce(t, key)
}

// ranOnce checks that the high-risk call under key ran once, and that a
// retry gets its recorded result.
func (h *crashRun) ranOnce(t *testing.T, key string) {
	t.Helper()
	if res := call(t, h.base, closeAccount("", key)); res.Status != "success" || !res.Replayed {
		t.Errorf("a retry of the approved call got %+v; want its recorded result", res)
	}
	h.fx.mu.Lock()
	defer h.fx.mu.Unlock()
	n := 0
	for _, c := range h.fx.closed {
		n += c
	}
	if n != 1 {
		t.Errorf("the approved call ran %d times; want 1 (%v)", n, h.fx.closed)
	}
}

// undoneOnce checks that request, which the restart interrupted, had its
// booking under key undone once, and that a retry of it is told so.
func (h *crashRun) undoneOnce(t *testing.T, request, key string) {
	t.Helper()
	if s := h.state(t, request); s != "interrupted" {
		t.Errorf("request %s is %s; want interrupted", request, s)
	}
	if n := h.counts(func(fx *sideEffects) int { return fx.undone["1/1"] }); n != 1 {
		t.Errorf("the booking was undone %d times; want 1", n)
	}
	if res := call(t, h.base, book("", key, 1, 1)); res.Error == nil || res.Error.Code != "undone" {
		t.Errorf("the retry of %s got %+v; want the error undone", key, res)
	}
}

// notTwice checks that a retry of the booking under key does not book it
// again if it ran.
func (h *crashRun) notTwice(t *testing.T, key string) {
	t.Helper()
	call(t, h.base, book("", key, 1, 1))
	if n := h.counts(func(fx *sideEffects) int { return fx.booked[toolKey("travel__book", key)] }); n != 1 {
		t.Errorf("%s booked %d times, with its retry; want 1", key, n)
	}
}

// checkAll makes the checks of every case (TestCrashAtEveryDurablePoint)
// and stops the gateway cmd.
func (h *crashRun) checkAll(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	h.fx.mu.Lock()
	h.fx.bookedOnce(t, "")
	for leg, n := range h.fx.legs {
		if n > 1 {
			t.Errorf("leg %s booked %d times", leg, n)
		}
	}
	for key, n := range h.fx.unbooked {
		if n > 1 {
			t.Errorf("undo under key %s ran %d times", key, n)
		}
	}
	h.fx.mu.Unlock()
	status, page := get(t, h.base+"/v1/requests")
	var list struct{ Requests []struct{ ID, State string } }
	if status != 200 || json.Unmarshal([]byte(page), &list) != nil {
		t.Fatalf("GET /v1/requests: %d %s", status, page)
	}
	for _, r := range list.Requests {
		if r.ID == "r" && (r.State == "running" || r.State == "") {
			t.Errorf("request r is %q after the restart; want it final", r.State)
		}
	}
	if out, _, err := runCmd(t, newRequests, "list", "--api", h.base); err != nil {
		t.Errorf("reach requests: %v\n%s", err, out)
	}
	stopServe(t, cmd, os.Interrupt)
	where := []string{"--data", h.data}
	if h.store != "" {
		where = []string{"--store", h.store}
	}
	if out, errOut, err := runCmd(t, newAudit, append([]string{"verify"}, where...)...); err != nil || !strings.Contains(out, "chain ok") {
		t.Errorf("reach audit verify: %v\n%s%s", err, out, errOut)
	}
	ctx := context.Background()
	var st interface {
		ClaimedKeys(ctx context.Context) ([]*store.IdemRecord, error)
		Close() error
	}
	var err error
	if h.store != "" {
		st, err = postgres.Open(ctx, h.store, &postgres.Options{NoMigrate: true})
	} else {
		st, err = sqlite.Open(ctx, h.data, &sqlite.Options{NoCreate: true})
	}
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if claims, err := st.ClaimedKeys(ctx); err != nil || len(claims) != 0 {
		t.Errorf("claims left in the store: %v (%v)", claims, err)
	}
}

// stuckAgent is an A2A agent whose tasks work until they are cancelled.
type stuckAgent struct{}

func (stuckAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		<-ctx.Done()
	}
}

func (stuckAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// stuckAgentServer serves stuckAgent on loopback and returns its URL.
func stuckAgentServer(t *testing.T) string {
	mux := http.NewServeMux()
	up := httptest.NewServer(mux)
	t.Cleanup(up.Close)
	card := &a2a.AgentCard{Name: "slow", Description: "works for ever", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(up.URL+"/", a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true}, DefaultInputModes: []string{"text"}, DefaultOutputModes: []string{"text"},
		Skills: []a2a.AgentSkill{{ID: "work", Name: "work", Description: "work", Tags: []string{"work"}}}}
	mux.Handle("GET "+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("POST /", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(stuckAgent{})))
	return up.URL
}

// TestCrashAtTaskStored kills a real `reach serve` once an A2A task's view
// is durable (task.stored, docs/STATE.md), its hand-off still working, and
// restarts it: the task is found by its id, and is not shown working, as
// if the hand-off, which the restart interrupted, went on.
func TestCrashAtTaskStored(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	for _, point := range []string{"task.stored#1", "task.stored#2"} {
		t.Run(strings.ReplaceAll(point, "#", "_"), func(t *testing.T) { killAtTaskStored(t, "", point) })
	}
}

// killAtTaskStored is a case of TestCrashAtTaskStored over the
// PostgreSQL database url, or SQLite if "".
func killAtTaskStored(t *testing.T, url, point string) {
	h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil), store: url}
	cfg := writeConfig(t, storeHead(url)+travelYAML(sideEffectsUpstream(t, h.fx), "agents:\n  - {name: slow, url: '"+stuckAgentServer(t)+"'}\n"))
	addr := freeAddr(t)
	h.base = "http://" + addr
	client := func() *a2aclient.Client {
		c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(h.base+"/a2a/slow", a2a.TransportProtocolJSONRPC)},
			a2aclient.WithJSONRPCTransport(http.DefaultClient))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	h.kill(t, cfg, addr, point, func(t *testing.T, h *crashRun) {
		client().SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("work"))})
	})
	cmd := startReach(t, cfg, addr, h.data)
	killAtEnd(t, cmd)
	if url != "" {
		h.recovered(t)
	}
	st := h.open(t)
	tasks, err := st.ListTasks(t.Context(), "slow", "local", "", 10)
	st.Close()
	if err != nil || len(tasks) != 1 {
		t.Fatalf("stored tasks: %v (%v); want the one", tasks, err)
	}
	tk, err := client().GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(tasks[0].ID)})
	if err != nil {
		t.Fatalf("GetTask %s after the restart: %v", tasks[0].ID, err)
	}
	if !tk.Status.State.Terminal() {
		t.Errorf("task %s is %s after the restart; want it final (its hand-off was interrupted)", tk.ID, tk.Status.State)
	}
	h.checkAll(t, cmd)
	st = h.open(t)
	defer st.Close()
	if rec, err := st.GetTask(t.Context(), "slow", tasks[0].ID); err != nil || !rec.Final || rec.State != string(a2a.TaskStateFailed) {
		t.Errorf("the stored task: %+v (%v); want it stored failed, final", rec, err)
	}
}

// storeHead is the configuration's head for the PostgreSQL database url
// (one instance, a, whose dead lives are recovered once 5 s old), or ""
// for SQLite in the data folder. The TTL also bounds a request's join in
// the store: at 1 s, a loaded machine's join ran past it now and then, and
// the call was refused store_unavailable.
func storeHead(url string) string {
	if url == "" {
		return ""
	}
	return "store: " + url + "\ninstance: a\ninstance_ttl: 5s\n"
}

// open opens h's store, the gateway stopped or not: PostgreSQL's if h
// has one, else SQLite's in h's data folder.
func (h *crashRun) open(t *testing.T) store.Store {
	t.Helper()
	var (
		st  store.Store
		err error
	)
	if h.store != "" {
		st, err = postgres.Open(t.Context(), h.store, &postgres.Options{NoMigrate: true})
	} else {
		st, err = sqlite.Open(t.Context(), h.data, &sqlite.Options{NoCreate: true})
	}
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestCrashAtTaskSoftStopped kills a real `reach serve` once the soft
// stop of an A2A task's request is durable (request.stopped, the second:
// the request and its hand-off both stopped), the task still working at
// the agent, as a soft stop lets it, and restarts it: the task is not
// shown working for ever. Its hand-off is stopped after the restart, not
// interrupted, and on one gateway nothing follows its stream any more.
func TestCrashAtTaskSoftStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil)}
	cfg := travelConfig(t, sideEffectsUpstream(t, h.fx), "agents:\n  - {name: slow, url: '"+stuckAgentServer(t)+"'}\n")
	addr := freeAddr(t)
	h.base = "http://" + addr
	client := func() *a2aclient.Client {
		c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(h.base+"/a2a/slow", a2a.TransportProtocolJSONRPC)},
			a2aclient.WithJSONRPCTransport(http.DefaultClient))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	h.kill(t, cfg, addr, "request.stopped#2", func(t *testing.T, h *crashRun) {
		go client().SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("work"))})
		for range 1200 { // until the task is stored working; then stop what runs, softly
			time.Sleep(50 * time.Millisecond)
			st, err := sqlite.Open(context.Background(), h.data, &sqlite.Options{NoCreate: true})
			if err != nil {
				continue
			}
			tasks, err := st.ListTasks(context.Background(), "slow", "local", "", 10)
			st.Close()
			if err != nil || len(tasks) == 0 || tasks[0].Request == "" {
				continue
			}
			h.post("/v1/requests/"+tasks[0].Request+"/cancel", `{"mode":"soft","reason":"enough"}`)
			resp, err := http.Get(h.base + "/v1/requests")
			if err != nil {
				return
			}
			var list struct{ Requests []struct{ ID, State string } }
			json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
			for _, r := range list.Requests {
				if r.State == "running" {
					h.post("/v1/requests/"+r.ID+"/cancel", `{"mode":"soft","reason":"enough"}`)
				}
			}
			return
		}
	})
	cmd := startReach(t, cfg, addr, h.data)
	killAtEnd(t, cmd)
	st, err := sqlite.Open(t.Context(), h.data, &sqlite.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := st.ListTasks(t.Context(), "slow", "local", "", 10)
	st.Close()
	if err != nil || len(tasks) != 1 {
		t.Fatalf("stored tasks: %v (%v); want the one", tasks, err)
	}
	if s := h.state(t, tasks[0].Request); !strings.HasPrefix(s, "stopped") {
		t.Fatalf("the task's request %s is %s after the restart; want it stopped (the case this test is about)", tasks[0].Request, s)
	}
	tk, err := client().GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(tasks[0].ID)})
	if err != nil {
		t.Fatalf("GetTask %s after the restart: %v", tasks[0].ID, err)
	}
	if !tk.Status.State.Terminal() {
		t.Errorf("task %s is %s after the restart; want it final (its hand-off was stopped, then cut off)", tk.ID, tk.Status.State)
	}
	h.checkAll(t, cmd)
}

// TestCrashAtSessionDeleted kills a real `reach serve` once an MCP
// session's DELETE is durable (session.deleted, docs/STATE.md), before its
// client hears so, and restarts it: the session stays gone, not taken
// over under its id as a session that outlives its process is.
func TestCrashAtSessionDeleted(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	crashAtSessionDeleted(t, "")
}

// crashAtSessionDeleted is TestCrashAtSessionDeleted over the PostgreSQL
// database url, or SQLite if "".
func crashAtSessionDeleted(t *testing.T, url string) {
	h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil), store: url}
	cfg := writeConfig(t, storeHead(url)+travelYAML(sideEffectsUpstream(t, h.fx), ""))
	addr := freeAddr(t)
	h.base = "http://" + addr
	mcpPost := func(sid, body string) *http.Response {
		req, _ := http.NewRequest("POST", h.base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			t.Fatalf("POST /mcp %s: %v", body, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	sid := ""
	h.kill(t, cfg, addr, "session.deleted", func(t *testing.T, h *crashRun) {
		resp := mcpPost("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"crash","version":"1"}}}`)
		if sid = resp.Header.Get("Mcp-Session-Id"); sid == "" {
			t.Errorf("initialize answered %d without a session", resp.StatusCode)
			return
		}
		mcpPost(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		if resp := mcpPost(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != 200 {
			t.Errorf("tools/list in the session: %d", resp.StatusCode)
		}
		req, _ := http.NewRequest("DELETE", h.base+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", sid)
		if resp, err := http.DefaultClient.Do(req); err == nil { // cut off by the kill
			resp.Body.Close()
		}
	})
	cmd := startReach(t, cfg, addr, h.data)
	killAtEnd(t, cmd)
	if url != "" {
		h.recovered(t)
	}
	if resp := mcpPost(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the deleted session's call after the restart answered %d; want 404 (it stays gone)", resp.StatusCode)
	}
	h.checkAll(t, cmd)
}
