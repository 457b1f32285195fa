package modelproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/budget"
	"github.com/agentreach/reach/internal/store"
)

// Model turns at the same time, and a token budget. A turn's answer is
// capped at what its request has left once its prompt is counted; but
// turns that run at once were each checked before the others were
// charged, and together spent the budget as many times over as there were
// turns (8 turns at once on a 1,000-token budget spent 8,000). So a
// running turn holds, on its request and every request above it, what it
// may still spend: its prompt (as estimated) and its answer's cap. A new
// turn's answer is capped at what is left once the holds are counted too,
// and a hold is let go only after its turn is charged what it spent, so
// that the turns together never spend past the budget.
//
// A turn that would get less than it would alone (its max_tokens, or all
// that is left once its prompt is counted when it set none) waits for a
// running turn of the budget to end, for as long as its model's timeout
// or until its client goes away; past that it is refused with a 503 the
// client may retry, which says what holds the budget. A turn that sets no
// max_tokens holds all its request has left: turns of parallel sub-agents
// that set none run one after another. A cost budget bounds a priced
// turn's answer the same way: what is left of it, less the prompt at the
// input price, at the output price; a turn holds its cost too. With
// several instances (a Holder), a turn holds its prompt and cap on the
// shared ledger as well, which refuses a hold the other instances' holds
// leave no room for: the turn then waits as for this instance's turns,
// asking again when a turn of any instance lets go of a hold on its
// request or one above it (HoldWatcher: the store's notification), and
// every sharedFallback in case a notification was lost or a dead
// instance's holds stopped counting (INSTANCES.md).

// holds are the tokens and cost the running turns of each request hold
// (theirs and their sub-requests').
type holds struct {
	mu      sync.Mutex
	tokens  map[*reach.Request]int64
	cost    map[*reach.Request]int64 // nano-units
	turns   map[*reach.Request]int   // the running turns that hold them
	settled chan struct{}            // closed, and made anew, when a hold is let go
}

// hold is what one running turn holds.
type hold struct {
	req          *reach.Request
	tokens, cost int64
}

// ask is what a turn asks of its budget: its prompt (about prompt tokens),
// the answer its client asked for (asked, 0: no limit), the least cap its
// API takes (minimum), its model's price per million tokens (when priced:
// a cost budget caps its answer too), and how long it may wait (wait);
// watch, if not nil, is what wakes it while it waits for the holds of
// other instances' turns (HoldWatcher).
type ask struct {
	prompt, asked, minimum int64
	files                  int // file parts named by id or URL, counted as the context window
	price                  budget.Price
	priced                 bool
	wait                   time.Duration
	watch                  func() (wake <-chan struct{}, stop func())
}

// promptCost is the cost of the prompt, in nano-units, and perToken what
// each token of the answer costs (0: a cost budget does not cap it).
func (a ask) promptCost() int64 {
	if !a.priced {
		return 0
	}
	return nanos(float64(a.prompt) * a.price.Input * 1e3)
}

func (a ask) perToken() float64 {
	if !a.priced {
		return 0
	}
	return a.price.Output * 1e3 // nano-units a token: price is per million tokens
}

// costOf is the cost, in nano-units, of a hold of tokens (its prompt's
// and the rest at the answer's price).
func (a ask) costOf(tokens int64) int64 {
	if !a.priced {
		return 0
	}
	return a.promptCost() + nanos(float64(tokens-a.prompt)*a.perToken())
}

// nanos rounds a non-negative cost in nano-units up to an int64 (no more
// than an int64 holds).
func nanos(f float64) int64 {
	if f >= math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return int64(math.Ceil(max(f, 0)))
}

// sharedHold holds, on the shared ledger, tokens and cost for the turn (or
// need, when nothing is held on a request): ok false, nothing held, and
// what the shared ledger has left and free.
type sharedHold func(tokens, cost, needTokens, needCost int64) (ok bool, left SharedLeft, err error)

// sharedPoll is how often a turn whose hold the shared ledger refused asks
// again while it waits, when nothing says that turns on other instances let
// go of theirs (no HoldWatcher); sharedFallback, when something does: only
// for a word lost (the listening connection cut off), or the holds of an
// instance that died, which stop counting once its life is instance_ttl old
// with no word to anyone. Variables for tests.
var (
	sharedPoll     = 100 * time.Millisecond
	sharedFallback = time.Second
)

// take holds, for a turn of req, what it may spend, and returns its
// answer's cap, and whether the turn is to be told to finish (the cap
// makes room for the note). sl is what the shared ledger says req and the
// requests above it have left, and hs, if not nil, holds the turn's cap
// there too (several instances). It waits while the holds of running
// turns leave less than the turn would get alone, until a.wait has passed
// or ctx is done; it refuses a prompt that alone needs more than is left.
// With no token budget (or cost budget, for a priced model) on req or
// above it, it holds nothing.
func (h *holds) take(ctx context.Context, req *reach.Request, a ask, sl SharedLeft, hs sharedHold) (cap int64, told bool, release func(), err error) {
	var timer <-chan time.Time
	// wake, while a turn waits for other instances' holds, is closed when
	// one of them is let go (a.watch); unwatch ends the watch.
	// The watch is begun only once the shared ledger refused the turn: a
	// turn it admits at once (most) watches nothing, and one it refuses
	// asks again, watching, before it waits (a hold let go between the
	// refusal and the watch is then in what the ledger answers).
	var wake <-chan struct{}
	unwatch := func() {}
	defer func() { unwatch() }()
	refused := false
	for {
		h.mu.Lock()
		if h.tokens == nil {
			h.tokens, h.cost, h.turns, h.settled = map[*reach.Request]int64{}, map[*reach.Request]int64{}, map[*reach.Request]int{}, make(chan struct{})
		}
		lf := h.left(req, a, sl)
		if !lf.limited {
			h.mu.Unlock()
			return 0, false, func() {}, nil
		}
		if a.prompt >= lf.alone {
			h.mu.Unlock()
			if lf.byCost {
				return 0, false, nil, promptTooCostly(req, a, lf.costLeft)
			}
			return 0, false, nil, promptTooLarge(req, a, lf.alone)
		}
		want, note := lf.alone-a.prompt, int64(0)
		switch {
		case a.asked > 0 && a.asked <= want:
			want = a.asked
		case (a.asked > 0 || want < lowBudget) && want > noteTokens:
			// Capped: the turn is told to finish (withNote), a note
			// its prompt did not count, and which its answer's cap
			// makes room for. (With less room, it is capped untold:
			// the note would spend more than is left.)
			want, note = want-noteTokens, noteTokens
		}
		tokens := a.prompt + note + max(want, a.minimum)
		hd := hold{req: req, tokens: tokens, cost: a.costOf(tokens)}
		var settled chan struct{}
		var he *heldError
		if lf.free >= hd.tokens || lf.free == lf.alone { // it fits, or nothing held binds it
			h.add(hd, 1)
			h.mu.Unlock()
			var once sync.Once
			release := func() { once.Do(func() { h.release(hd) }) }
			if hs == nil {
				return want, note > 0, release, nil
			}
			need := a.prompt + note + want
			if a.watch != nil && refused {
				// Before asking: a hold let go once the store has
				// answered wakes the turn.
				wake, unwatch = a.watch()
			}
			ok, got, err := hs(hd.tokens, hd.cost, need, a.costOf(need))
			if err != nil || ok {
				unwatch()
				wake, unwatch = nil, func() {}
			}
			if err != nil {
				release()
				return 0, false, nil, err
			}
			if ok {
				return want, note > 0, release, nil
			}
			// Turns on other instances hold what this one needs: it
			// waits as for this instance's own, with what the shared
			// ledger said. Asked again at once if what it said differs
			// from what the turn was capped by (an estimate, or other
			// turns let go or spent meanwhile), or if it asked with no
			// watch (its first ask); else once a turn of this
			// instance ends, one of another lets go of its hold (wake),
			// or sharedFallback has passed (sharedPoll with no wake).
			release()
			known := sl.Known
			sl = got
			unwatched := a.watch != nil && !refused // asked with no watch: asked again with one
			refused = true
			h.mu.Lock()
			if f := h.left(req, a, sl); unwatched || !known || f.alone != lf.alone || f.free != lf.free {
				h.mu.Unlock()
				unwatch()
				wake, unwatch = nil, func() {}
				continue
			}
			settled = h.settled
			he = &heldError{req: req, held: max(lf.alone-lf.free, 0), left: lf.alone, prompt: a.prompt, want: want, bound: req, others: true}
			h.mu.Unlock()
		} else {
			settled = h.settled
			he = &heldError{req: req, held: h.tokens[lf.bound], turns: h.turns[lf.bound], left: lf.alone, prompt: a.prompt, want: want, bound: lf.bound}
			if sl.Known { // the shared ledger's holds, of every instance, count
				he.held, he.bound, he.others = max(lf.alone-lf.free, h.tokens[lf.bound]), req, true
			}
			h.mu.Unlock()
		}
		if timer == nil {
			t := time.NewTimer(a.wait)
			defer t.Stop()
			timer = t.C
		}
		var poll <-chan time.Time
		var pt *time.Timer
		if sl.Known {
			every := sharedPoll
			if wake != nil {
				every = sharedFallback
			}
			pt = time.NewTimer(every)
			poll = pt.C
		}
		select {
		case <-settled:
		case <-wake:
		case <-poll:
		case <-timer:
			return 0, false, nil, he.refusal()
		case <-ctx.Done():
			return 0, false, nil, context.Cause(ctx) // a stop's cause, if the request was stopped
		}
		if pt != nil {
			// Stopped here, not deferred: a turn woken many times (each
			// hold let go on its request) would pile up a deferred stop
			// and its timer for each wake until it is admitted.
			pt.Stop()
		}
		sl.Known = false // asked again
		unwatch()
		wake, unwatch = nil, func() {}
	}
}

// add counts hd on its request and every request above it, n times (1 to
// take it, -1 to let go), with h.mu held.
func (h *holds) add(hd hold, n int) {
	for q := hd.req; q != nil; q = q.Parent() {
		h.tokens[q] += int64(n) * hd.tokens
		h.cost[q] += int64(n) * hd.cost
		h.turns[q] += n
		if h.tokens[q] <= 0 && h.turns[q] <= 0 {
			delete(h.tokens, q)
			delete(h.cost, q)
			delete(h.turns, q)
		}
	}
}

// leftover is what a turn's budgets leave it, in tokens: a cost budget's
// counted at the turn's price (its prompt at the input's, the rest at the
// output's).
type leftover struct {
	free, alone int64 // the fewest left with the holds counted, and without
	bound       *reach.Request
	limited     bool
	byCost      bool  // alone is a cost budget's
	costLeft    int64 // the cost left, then (nano-units)
}

// left returns, with h.mu held, the fewest tokens req and the requests
// above it have free once the holds are counted, the fewest they have
// left without them, the request whose holds bound the first, and whether
// any of them (or the shared ledger) has a token budget (or a cost budget,
// for a priced turn). The shared ledger's left is less the largest hold of
// them (the most this instance's running turns may still spend of it),
// or, once it said, what it has free with every instance's holds counted.
func (h *holds) left(req *reach.Request, a ask, sl SharedLeft) (lf leftover) {
	per := a.perToken()
	// asTokens is what a cost of c nano-units leaves the turn, in tokens.
	asTokens := func(c int64) int64 {
		c -= a.promptCost()
		if c < 0 {
			return a.prompt - 1 // not even the prompt
		}
		return a.prompt + int64(float64(c)/per)
	}
	bind := func(free, alone int64, q *reach.Request, byCost bool, cost int64) {
		if !lf.limited || free < lf.free {
			lf.free, lf.bound = free, q
		}
		if !lf.limited || alone < lf.alone {
			lf.alone, lf.byCost, lf.costLeft = alone, byCost, cost
		}
		lf.limited = true
	}
	var most, mostCost int64
	var mostAt, mostCostAt *reach.Request
	for q := req; q != nil; q = q.Parent() {
		if h.tokens[q] > most || mostAt == nil {
			most, mostAt = h.tokens[q], q
		}
		if h.cost[q] > mostCost || mostCostAt == nil {
			mostCost, mostCostAt = h.cost[q], q
		}
		if q.Budget().Tokens > 0 {
			l := q.Remaining().Tokens
			bind(l-h.tokens[q], l, q, false, 0)
		}
		if c := q.Budget().Cost; c > 0 && per > 0 {
			l := budget.Nanos(q.Remaining().Cost)
			bind(asTokens(l-h.cost[q]), asTokens(l), q, true, l)
		}
	}
	if sl.TokensLimited {
		free, at := sl.Tokens-most, mostAt
		if sl.Known {
			free, at = sl.FreeTokens, req
		}
		bind(free, sl.Tokens, at, false, 0)
	}
	if sl.CostLimited && per > 0 {
		free, at := sl.Cost-mostCost, mostCostAt
		if sl.Known {
			free, at = sl.FreeCost, req
		}
		bind(asTokens(free), asTokens(sl.Cost), at, true, sl.Cost)
	}
	return lf
}

// release lets go of what a turn held, once it is charged what it spent,
// and wakes the turns waiting.
func (h *holds) release(hd hold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.add(hd, -1)
	close(h.settled)
	h.settled = make(chan struct{})
}

// heldError is the refusal of a turn whose budget other turns still held
// when its wait ended.
type heldError struct {
	req                *reach.Request
	held               int64 // tokens held on the request that bounds the turn
	turns              int   // by that many running turns of this instance
	others             bool  // by turns of any instance (the shared ledger's holds)
	left, prompt, want int64
	bound              *reach.Request
}

// refusal is the error a turn gets when the holds of running turns still
// left it less than it needs once its wait ended: nothing is spent, and
// the same turn may pass once they end.
func (e *heldError) refusal() *reach.Error {
	return &reach.Error{Guard: "admit", Type: reach.TypeTransient, Code: "budget_tokens_held",
		Message: fmt.Sprintf("The token budget of request %s has %d tokens left, of which %d are held by %s running at the same time (each holds its prompt and its answer's cap until it ends); this turn needs about %d for its prompt and %d for its answer.",
			e.bound.ID(), e.left, e.held, e.by(), e.prompt, e.want),
		Suggestion: "Retry when those turns end, or set max_tokens on model turns that run at the same time, so that each holds less."}
}

// by says who holds the budget.
func (e *heldError) by() string {
	if e.others {
		return "model turns on every gateway instance (tokens, or cost counted at this model's price)"
	}
	return fmt.Sprintf("%d model turns", e.turns)
}

// askedTokens is the answer a request (its decoded body) asks for at most,
// all its choices together: the least of max_completion_tokens and
// max_tokens (max_output_tokens for the Responses API) that is a positive
// integer, times n; 0 when it sets none.
func askedTokens(api apiKind, body map[string]json.RawMessage) int64 {
	keys := []string{"max_completion_tokens", "max_tokens"}
	if api == responsesAPI {
		keys = []string{"max_output_tokens"}
	}
	var asked int64
	for _, k := range keys {
		var v int64
		if json.Unmarshal(body[k], &v) == nil && v > 0 && (asked == 0 || v < asked) {
			asked = v
		}
	}
	if n := choices(body["n"]); asked > 0 && n > 1 {
		if asked > (1<<62)/n {
			return 0
		}
		asked *= n
	}
	return asked
}

// unholdWait is how long one attempt to let go of a turn's hold on the
// shared ledger may take, and the longest wait between two.
const unholdWait = 10 * time.Second

// chargeShared debits tokens and cost (nano-units), what a model turn of
// req was charged and has not debited yet, from the shared ledger, then
// calls then (the turn lets go of its hold). A charge the store does not
// take (it restarted, the connection was cut) is made again by rt (one
// goroutine for all of the proxy's, see retrier), waiting longer each time
// (up to wait), until it is taken or the store is closed (store.ErrClosed:
// it never takes one again), and only then is the hold let go: meanwhile
// the hold counts what the charge will. Before, the charge was dropped
// (logged), and the turn's tokens were never spent on the shared ledger,
// though its answer was passed on. Each attempt is bounded by wait. A
// charge whose commit landed though its answer was lost is counted twice
// (the safe side); an instance that dies before the store takes it loses
// it.
func chargeShared(rt *retrier, log *slog.Logger, l Ledger, req *reach.Request, tokens, cost int64, wait time.Duration, then func()) {
	if tokens == 0 && cost == 0 {
		then()
		return
	}
	rt.untilTaken(wait, func(ctx context.Context) error { return l.Spend(ctx, req, tokens, cost) }, func(err error) {
		log.Warn("debiting a model turn from the shared ledger failed: tried again until the store takes it (meanwhile its hold counts against the request's budget)", "request", req.ID(), "err", err)
	}, func(err error, retried bool) {
		switch {
		case err != nil:
			log.Warn("a model turn's charge was not debited from the shared ledger: the store is closed (this instance stops), and never takes it; dropped", "request", req.ID(), "err", err)
		case retried:
			log.Info("a model turn's charge is debited from the shared ledger", "request", req.ID())
		}
		then()
	})
}

// letGoShared lets go of what the model turn named turn holds on the
// shared ledger. A hold left there would count for as long as this
// instance lives (only a dead life's holds count for nothing), so every
// later turn of the request tree, on every instance, would wait for it and
// be refused budget_tokens_held: an attempt the store does not take is made
// again by rt, waiting longer each time (up to wait), until it is taken or
// the store is closed (it never takes one again). Each attempt is bounded
// by wait: a store that hangs does not hang the turn's handler.
func letGoShared(rt *retrier, log *slog.Logger, hl Holder, request, turn string, wait time.Duration) {
	rt.untilTaken(wait, func(ctx context.Context) error { return hl.Unhold(ctx, turn) }, func(err error) {
		log.Warn("letting go of a model turn's hold on the shared ledger failed: tried again until the store takes it (meanwhile the hold counts against the request's budget)", "request", request, "err", err)
	}, func(err error, retried bool) {
		if err == nil && retried {
			log.Info("a model turn's hold on the shared ledger is let go", "request", request)
		}
	})
}

// retrier makes again the attempts the shared store refused (untilTaken),
// from one goroutine, one attempt at a time: while the store is open but
// does not answer, the turns that ended meanwhile wait in its list, each
// with its charge or hold, and the store is asked once a pause, not once a
// pause by each of them from a goroutine of its own (there was one per
// turn, as many as the turns that ended while it did not answer). Its zero
// value is ready; a Proxy has one.
type retrier struct {
	mu      sync.Mutex
	pending []retryAttempt // in the order refused, the next first
	running bool           // its goroutine runs
}

type retryAttempt struct {
	try     func(context.Context) error
	settled func(err error, retried bool)
}

// untilTaken makes an attempt (try, bounded by wait) that the shared store
// may refuse, and, when it does (refused is called with why), has r make
// it again until the store takes it or is closed (store.ErrClosed: a
// closed store never takes one, and a loop past it would run for as long
// as the process). Then it calls settled with nil, or the closed store's
// error, and whether the attempt was made again.
func (r *retrier) untilTaken(wait time.Duration, try func(context.Context) error, refused func(error), settled func(err error, retried bool)) {
	err := attemptWithin(wait, try)
	if err == nil || errors.Is(err, store.ErrClosed) {
		settled(err, false)
		return
	}
	refused(err)
	r.mu.Lock()
	r.pending = append(r.pending, retryAttempt{try, settled})
	start := !r.running
	r.running = true
	r.mu.Unlock()
	if start {
		go r.run(wait)
	}
}

// run makes the pending attempts again, the first first, until none is
// left: after a pause, waiting longer after each refusal (up to wait),
// and, once one is taken, the next at once. A refused attempt goes to the
// end of the list: one the store never takes does not hold the others.
func (r *retrier) run(wait time.Duration) {
	for pause := min(100*time.Millisecond, wait); ; {
		time.Sleep(pause)
		for {
			r.mu.Lock()
			if len(r.pending) == 0 {
				r.running = false
				r.mu.Unlock()
				return
			}
			a := r.pending[0]
			r.pending[0] = retryAttempt{}
			r.pending = r.pending[1:]
			r.mu.Unlock()
			err := attemptWithin(wait, a.try)
			if err != nil && !errors.Is(err, store.ErrClosed) {
				r.mu.Lock()
				r.pending = append(r.pending, a)
				r.mu.Unlock()
				pause = min(pause*2, wait)
				break
			}
			a.settled(err, true) // may refuse another (a charge's then lets go of its hold): it joins the list
			pause = min(100*time.Millisecond, wait)
		}
	}
}

// attemptWithin calls try with a context that ends after wait.
func attemptWithin(wait time.Duration, try func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return try(ctx)
}
