package modelproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/agentreach/reach"
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
// that set none run one after another. This bounds the turns of one
// instance: the shared ledger of several instances holds no answer caps
// (INSTANCES.md).

// holds are the tokens the running turns of each request hold (theirs and
// their sub-requests').
type holds struct {
	mu      sync.Mutex
	tokens  map[*reach.Request]int64
	turns   map[*reach.Request]int // the running turns that hold them
	settled chan struct{}          // closed, and made anew, when a hold is let go
}

// hold is what one running turn holds.
type hold struct {
	req    *reach.Request
	tokens int64
}

// heldError is the refusal of a turn whose budget other turns still held
// when its wait ended.
type heldError struct {
	req                *reach.Request
	held               int64 // tokens held on the request that bounds the turn
	turns              int   // by that many running turns
	left, prompt, want int64
	bound              *reach.Request
}

// take holds, for a turn of req whose prompt is about prompt tokens, what
// it may spend, and returns its answer's cap, and whether the turn is to
// be told to finish (the cap makes room for the note). sleft and slimited are what
// the shared ledger says req and the requests above it have left (limited
// false without one). asked is the answer the client asked for (0: no
// limit), minimum the least cap its API takes. It waits while the holds of
// running turns leave less than the turn would get alone, until wait has
// passed or ctx is done; it refuses a prompt that alone needs more than is
// left. With no token budget on req or above it, it holds nothing.
func (h *holds) take(ctx context.Context, req *reach.Request, prompt, asked, minimum, sleft int64, slimited bool, wait time.Duration) (cap int64, told bool, release func(), err error) {
	var timer <-chan time.Time
	for {
		h.mu.Lock()
		if h.tokens == nil {
			h.tokens, h.turns, h.settled = map[*reach.Request]int64{}, map[*reach.Request]int{}, make(chan struct{})
		}
		free, alone, bound, limited := h.left(req, sleft, slimited)
		if !limited {
			h.mu.Unlock()
			return 0, false, func() {}, nil
		}
		if prompt >= alone {
			h.mu.Unlock()
			return 0, false, nil, promptTooLarge(req, prompt, alone)
		}
		want, note := alone-prompt, int64(0)
		switch {
		case asked > 0 && asked <= want:
			want = asked
		case (asked > 0 || want < lowBudget) && want > noteTokens:
			// Capped: the turn is told to finish (withNote), a note
			// its prompt did not count, and which its answer's cap
			// makes room for. (With less room, it is capped untold:
			// the note would spend more than is left.)
			want, note = want-noteTokens, noteTokens
		}
		hd := hold{req: req, tokens: prompt + note + max(want, minimum)}
		if free >= hd.tokens || free == alone { // it fits, or nothing held binds it
			for q := req; q != nil; q = q.Parent() {
				h.tokens[q] += hd.tokens
				h.turns[q]++
			}
			h.mu.Unlock()
			var once sync.Once
			return want, note > 0, func() { once.Do(func() { h.release(hd) }) }, nil
		}
		settled := h.settled
		he := &heldError{req: req, held: h.tokens[bound], turns: h.turns[bound], left: alone, prompt: prompt, want: want, bound: bound}
		h.mu.Unlock()
		if timer == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-settled:
		case <-timer:
			return 0, false, nil, he.refusal()
		case <-ctx.Done():
			return 0, false, nil, context.Cause(ctx) // a stop's cause, if the request was stopped
		}
	}
}

// left returns, with h.mu held, the fewest tokens req and the requests
// above it have free once the holds are counted, the fewest they have
// left without them, the request whose holds bound the first, and whether
// any of them (or the shared ledger) has a token budget. The shared
// ledger's left is less the largest hold of them: the most this instance's
// running turns may still spend of it.
func (h *holds) left(req *reach.Request, sleft int64, slimited bool) (free, alone int64, bound *reach.Request, limited bool) {
	var most int64
	for q := req; q != nil; q = q.Parent() {
		most = max(most, h.tokens[q])
		if q.Budget().Tokens <= 0 {
			continue
		}
		l := q.Remaining().Tokens
		if !limited || l-h.tokens[q] < free {
			free, bound = l-h.tokens[q], q
		}
		if !limited || l < alone {
			alone = l
		}
		limited = true
	}
	if slimited {
		if !limited || sleft-most < free {
			free, bound = sleft-most, req
			for q := req; q != nil; q = q.Parent() {
				if h.tokens[q] == most {
					bound = q
					break
				}
			}
		}
		if !limited || sleft < alone {
			alone = sleft
		}
		limited = true
	}
	return free, alone, bound, limited
}

// release lets go of what a turn held, once it is charged what it spent,
// and wakes the turns waiting.
func (h *holds) release(hd hold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for q := hd.req; q != nil; q = q.Parent() {
		if h.tokens[q] -= hd.tokens; h.tokens[q] <= 0 {
			delete(h.tokens, q)
		}
		if h.turns[q]--; h.turns[q] <= 0 {
			delete(h.turns, q)
		}
	}
	close(h.settled)
	h.settled = make(chan struct{})
}

// refusal is the error a turn gets when the holds of running turns still
// left it less than it needs once its wait ended: nothing is spent, and
// the same turn may pass once they end.
func (e *heldError) refusal() *reach.Error {
	return &reach.Error{Guard: "admit", Type: reach.TypeTransient, Code: "budget_tokens_held",
		Message: fmt.Sprintf("The token budget of request %s has %d tokens left, of which %d are held by %d model turns running at the same time (each holds its prompt and its answer's cap until it ends); this turn needs about %d for its prompt and %d for its answer.",
			e.bound.ID(), e.left, e.held, e.turns, e.prompt, e.want),
		Suggestion: "Retry when those turns end, or set max_tokens on model turns that run at the same time, so that each holds less."}
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
