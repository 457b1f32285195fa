// Package budget holds the arithmetic of a request's budget (C2): its
// limits and what was spent, what is left, what a sub-agent's budget is
// carved to, and what a model call costs. The runtime's requests keep the
// counters and walk their tree; this room only counts.
//
//	left := budget.Remaining(limit, used)
//	child := budget.Carve(limit, left, explicit, 0.5)
package budget

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// Budget bounds one request (C2). A zero field means no limit in that
// dimension. Depth and Turns are independent: a request may make 30 turns at
// depth 3, or 3 turns at depth 10.
type Budget struct {
	Turns     int           `json:"turns,omitempty"`      // outer model calls (a sub-agent's turns count too)
	Depth     int           `json:"depth,omitempty"`      // tool calls and hand-offs nested on one stack
	ToolCalls int           `json:"tool_calls,omitempty"` // tool calls dispatched
	Tokens    int64         `json:"tokens,omitempty"`     // model tokens, input and output
	Cost      float64       `json:"cost,omitempty"`       // model cost, in the price table's currency
	Wall      time.Duration `json:"wall,omitempty"`       // wall clock from the request's start
}

// View is a budget as the API's views show it (a request's, an agent's):
// its wall clock a duration ("10m0s"), not the nanoseconds Budget's JSON
// holds.
type View struct {
	Turns     int     `json:"turns,omitempty"`
	Depth     int     `json:"depth,omitempty"`
	ToolCalls int     `json:"tool_calls,omitempty"`
	Tokens    int64   `json:"tokens,omitempty"`
	Cost      float64 `json:"cost,omitempty"`
	Wall      string  `json:"wall,omitempty"`
}

// View returns b as the views show it, its wall clock to the millisecond.
func (b Budget) View() View {
	v := View{Turns: b.Turns, Depth: b.Depth, ToolCalls: b.ToolCalls, Tokens: b.Tokens, Cost: b.Cost}
	if b.Wall > 0 {
		v.Wall = b.Wall.Round(time.Millisecond).String()
	}
	return v
}

// Usage is what a request (with its sub-requests) has spent.
type Usage struct {
	Turns     int           `json:"turns"`
	ToolCalls int           `json:"tool_calls"`
	Tokens    int64         `json:"tokens"`
	Cost      float64       `json:"cost"`
	Wall      time.Duration `json:"wall"`
	MaxDepth  int           `json:"max_depth"`
}

// Price is the cost of a model's tokens, per million.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// Remaining returns what is left of each limited dimension of limit after
// u (zero fields are unlimited, as in Budget); Depth is limit's.
func Remaining(limit Budget, u Usage) Budget {
	var b Budget
	if limit.Turns > 0 {
		b.Turns = max(limit.Turns-u.Turns, 0)
	}
	b.Depth = limit.Depth
	if limit.ToolCalls > 0 {
		b.ToolCalls = max(limit.ToolCalls-u.ToolCalls, 0)
	}
	if limit.Tokens > 0 {
		b.Tokens = max(limit.Tokens-u.Tokens, 0)
	}
	if limit.Cost > 0 {
		b.Cost = math.Max(limit.Cost-u.Cost, 0)
	}
	if limit.Wall > 0 {
		b.Wall = max(limit.Wall-u.Wall, 0)
	}
	return b
}

// Carve computes a child budget from its parent's limit and what the
// parent has left: explicit amounts (capped at what is left) where given,
// otherwise fraction of what is left. A dimension the parent does not
// limit stays unlimited unless explicit limits it; a limited one is never
// carved to zero. A fraction out of (0, 1] (NaN too) is 1, and an explicit
// amount that is negative (a cost NaN or infinite) is none: it neither
// limits a dimension the parent does not, nor turns a float's NaN into a
// budget no view can show.
func Carve(limit, left Budget, explicit *Budget, fraction float64) Budget {
	if !(fraction > 0 && fraction <= 1) {
		fraction = 1
	}
	var e Budget
	if explicit != nil {
		e = *explicit
		e.Turns, e.Depth, e.ToolCalls, e.Tokens, e.Wall = max(e.Turns, 0), max(e.Depth, 0), max(e.ToolCalls, 0), max(e.Tokens, 0), max(e.Wall, 0)
		if !(e.Cost > 0 && e.Cost <= math.MaxFloat64) {
			e.Cost = 0
		}
	}
	pick := func(exp, rem, lim int64) int64 {
		switch {
		case lim == 0 && exp == 0:
			return 0 // unlimited stays unlimited
		case lim == 0:
			return exp
		case exp > 0:
			return min(exp, max(rem, 1))
		default:
			return max(int64(float64(rem)*fraction), 1)
		}
	}
	var b Budget
	b.Turns = int(pick(int64(e.Turns), int64(left.Turns), int64(limit.Turns)))
	b.ToolCalls = int(pick(int64(e.ToolCalls), int64(left.ToolCalls), int64(limit.ToolCalls)))
	b.Tokens = pick(e.Tokens, left.Tokens, limit.Tokens)
	b.Wall = time.Duration(pick(int64(e.Wall), int64(left.Wall), int64(limit.Wall)))
	switch {
	case limit.Cost == 0:
		b.Cost = e.Cost
	case e.Cost > 0:
		b.Cost = math.Max(math.Min(e.Cost, left.Cost), 1e-9)
	default:
		b.Cost = math.Max(left.Cost*fraction, 1e-9)
	}
	// Depth is a position on the stack, not a spend: a child may not go
	// deeper than its parent may.
	b.Depth = limit.Depth
	if e.Depth > 0 && (b.Depth == 0 || e.Depth < b.Depth) {
		b.Depth = e.Depth
	}
	return b
}

// Charge is what one model call spends: its tokens, input and output, and
// its cost in billionths of the price unit. What an endpoint or a client
// reports is not trusted to be sane: negative counts would refund the
// budget and count as zero, a sum that overflows and a cost too large (or
// +Inf) spend everything, and a NaN or negative cost counts as zero. A
// zero cost comes from price, if priced.
func Charge(in, out int64, cost float64, price Price, priced bool) (tokens, costNano int64) {
	in, out = max(in, 0), max(out, 0)
	tokens = in + out
	if tokens < in { // overflowed
		tokens = math.MaxInt64
	}
	if math.IsNaN(cost) || cost < 0 {
		cost = 0
	}
	if cost == 0 && priced {
		cost = (float64(in)*price.Input + float64(out)*price.Output) / 1e6
	}
	costNano = int64(math.MaxInt64)
	if cost*1e9 < math.MaxInt64/2 { // +Inf and the like spend everything
		costNano = int64(cost * 1e9)
	}
	return tokens, costNano
}

// Nanos is a cost in billionths of the price unit, rounded (a cost read
// back from what Charge counted is that count): a NaN or negative cost is
// zero, and one past what an int64 holds (+Inf too) is math.MaxInt64. (A
// float that large made an int64 is the most negative number on amd64: a
// refund of everything.)
func Nanos(cost float64) int64 {
	switch {
	case math.IsNaN(cost) || cost <= 0:
		return 0
	case cost*1e9 >= math.MaxInt64/2:
		return math.MaxInt64
	}
	return int64(math.Round(cost * 1e9))
}

// AddSaturating adds d (not negative) to v, stopping at math.MaxInt64, and
// returns the sum.
func AddSaturating(v *atomic.Int64, d int64) int64 {
	for {
		old := v.Load()
		n := old + d
		if n < old {
			n = math.MaxInt64
		}
		if v.CompareAndSwap(old, n) {
			return n
		}
	}
}

// Word names a budget's dimension in a sentence: "tool-call" for
// tool_calls, "wall-clock" for wall, the dimension itself otherwise.
func Word(dim string) string {
	switch dim {
	case "tool_calls":
		return "tool-call"
	case "wall":
		return "wall-clock"
	}
	return dim
}

// LowContext is the note that tells the model its context budget runs
// low: limit tokens, of which used are spent, with less than frac of the
// limit left; "" while more is left, or with no limit.
func LowContext(limit, used int64, frac float64) string {
	if limit <= 0 {
		return ""
	}
	left := limit - used
	if float64(left) >= frac*float64(limit) {
		return ""
	}
	return fmt.Sprintf("your context budget is running low: %d of %d tokens left. Wrap up and answer soon.", max(left, 0), limit)
}

// Meter counts what one request spends, against its limit (C2). The
// meter of a sub-request has its parent's as Parent: what the sub-request
// spends counts for every meter above it, and a turn or a tool call is
// admitted only while none of them has run out. Set Limit and Parent
// before use; the counters are safe for concurrent use. A meter restored
// from an earlier run (Restore) counts on from what that run spent, its
// wall clock too: a request named again keeps what it spent.
type Meter struct {
	Limit  Budget
	Parent *Meter

	turns, toolCalls, tokens, costNano, maxDepth atomic.Int64 // costNano: billionths of the price unit
	// carried is the wall clock the earlier runs used (Restore), 0 for
	// none; ran, once not 0, what this run used when it ended (End).
	carried, ran atomic.Int64
}

// Used returns what was spent, with run the wall clock this run has used
// so far (what it used when it ended, once End was called), after what the
// earlier runs used.
func (m *Meter) Used(run time.Duration) Usage {
	if e := m.ran.Load(); e != 0 {
		run = time.Duration(e)
	}
	return Usage{Turns: int(m.turns.Load()), ToolCalls: int(m.toolCalls.Load()), Tokens: m.tokens.Load(),
		Cost: float64(m.costNano.Load()) / 1e9, Wall: time.Duration(m.carried.Load()) + run, MaxDepth: int(m.maxDepth.Load())}
}

// Restore sets the counters to u, what the earlier runs of a request
// spent: its wall clock counts before this run's (Used). A restored meter
// is Carried, however little u holds.
func (m *Meter) Restore(u Usage) {
	m.turns.Store(int64(max(u.Turns, 0)))
	m.toolCalls.Store(int64(max(u.ToolCalls, 0)))
	m.tokens.Store(max(u.Tokens, 0))
	m.costNano.Store(Nanos(u.Cost))
	m.maxDepth.Store(int64(max(u.MaxDepth, 0)))
	m.carried.Store(int64(max(u.Wall, 1)))
}

// Carried reports whether m counts on from earlier runs (Restore).
func (m *Meter) Carried() bool { return m.carried.Load() != 0 }

// End records run as the wall clock this run used: Used counts no more
// after it. Only the first End counts.
func (m *Meter) End(run time.Duration) {
	m.ran.CompareAndSwap(0, int64(max(run, 1)))
}

// AdmitTurn counts one turn on m and the meters above it; if one of them
// has used all its turns, it counts none and returns that meter with what
// a refusal says of it.
func (m *Meter) AdmitTurn() (*Meter, string) {
	return m.admit(func(q *Meter) (*atomic.Int64, int) { return &q.turns, q.Limit.Turns }, "%d turns used of %d")
}

// GiveBackTurn takes back one turn AdmitTurn counted on m and the meters
// above it, for a model turn the model did not answer (refused before it
// was sent, or answered with an error).
func (m *Meter) GiveBackTurn() {
	for q := m; q != nil; q = q.Parent {
		q.turns.Add(-1)
	}
}

// AdmitToolCall is AdmitTurn for a tool call.
func (m *Meter) AdmitToolCall() (*Meter, string) {
	return m.admit(func(q *Meter) (*atomic.Int64, int) { return &q.toolCalls, q.Limit.ToolCalls }, "%d tool calls made of %d")
}

// GiveBackToolCall takes back one tool call AdmitToolCall counted on m
// and the meters above it, for a call answered without being dispatched
// (a retry answered from the record of the call it repeats).
func (m *Meter) GiveBackToolCall() {
	for q := m; q != nil; q = q.Parent {
		q.toolCalls.Add(-1)
	}
}

func (m *Meter) admit(get func(*Meter) (*atomic.Int64, int), detail string) (*Meter, string) {
	for q := m; q != nil; q = q.Parent {
		ctr, lim := get(q)
		if n := ctr.Add(1); lim > 0 && n > int64(lim) {
			ctr.Add(-1)
			for p := m; p != q; p = p.Parent {
				c, _ := get(p)
				c.Add(-1)
			}
			return q, fmt.Sprintf(detail, lim, lim)
		}
	}
	return nil, ""
}

// NoteDepth raises the recorded maximum depth of m and the meters above.
func (m *Meter) NoteDepth(depth int) {
	for q := m; q != nil; q = q.Parent {
		for {
			d := q.maxDepth.Load()
			if int64(depth) <= d || q.maxDepth.CompareAndSwap(d, int64(depth)) {
				break
			}
		}
	}
}

// Add adds a model call's tokens and cost to m alone (the caller walks
// the meters above it, to stop each request whose budget ran out), and
// returns the dimension ("tokens" or "cost") this exhausts, with what a
// stop says of it, or "".
func (m *Meter) Add(tokens, costNano int64) (dim, detail string) {
	t := AddSaturating(&m.tokens, tokens)
	c := AddSaturating(&m.costNano, costNano)
	switch {
	case m.Limit.Tokens > 0 && t > m.Limit.Tokens:
		return "tokens", fmt.Sprintf("%d tokens used of %d", t, m.Limit.Tokens)
	case m.Limit.Cost > 0 && float64(c)/1e9 > m.Limit.Cost:
		return "cost", fmt.Sprintf("cost %.4f of %.4f", float64(c)/1e9, m.Limit.Cost)
	}
	return "", ""
}

// OverSpent returns the first meter, from m up, that has spent its tokens
// or cost, with the dimension and what a refusal says of it; nil if none.
func (m *Meter) OverSpent() (q *Meter, dim, detail string) {
	for q := m; q != nil; q = q.Parent {
		if t := q.tokens.Load(); q.Limit.Tokens > 0 && t >= q.Limit.Tokens {
			return q, "tokens", fmt.Sprintf("%d tokens used of %d", t, q.Limit.Tokens)
		}
		if c := float64(q.costNano.Load()) / 1e9; q.Limit.Cost > 0 && c >= q.Limit.Cost {
			return q, "cost", fmt.Sprintf("cost %.4f of %.4f", c, q.Limit.Cost)
		}
	}
	return nil, "", ""
}

// LowContext is the note of the topmost meter, from m up, whose tokens
// run low (less than frac of its limit left; see LowContext), or "".
func (m *Meter) LowContext(frac float64) string {
	var note string
	for q := m; q != nil; q = q.Parent {
		if n := LowContext(q.Limit.Tokens, q.tokens.Load(), frac); n != "" {
			note = n
		}
	}
	return note
}

// TokenUsage is what one model call consumed.
type TokenUsage struct {
	Input, Output int64
	// Cost, if not zero, is used as is; otherwise it comes from the
	// runtime's prices (Options.Prices).
	Cost float64
	// Model is the model that answered, when it is not the one the frame
	// names (a client may answer a sampling request with another): its
	// price applies if the runtime has one, else the frame's model's.
	Model string
	// Text is what the model said, when known (for the record and loop guards).
	Text string
}

// Lifts returns the dimensions ("turns", "depth", "tool_calls", "tokens",
// "cost", "wall") in which b allows more than within: a larger amount, or
// none (zero, unlimited) where within has one. A budget that lifts none
// only lowers limits.
func Lifts(b, within Budget) []string {
	var out []string
	lift := func(dim string, v, w float64) {
		if w > 0 && (v <= 0 || v > w) {
			out = append(out, dim)
		}
	}
	lift("turns", float64(b.Turns), float64(within.Turns))
	lift("depth", float64(b.Depth), float64(within.Depth))
	lift("tool_calls", float64(b.ToolCalls), float64(within.ToolCalls))
	lift("tokens", float64(b.Tokens), float64(within.Tokens))
	lift("cost", b.Cost, within.Cost)
	lift("wall", float64(b.Wall), float64(within.Wall))
	return out
}
