// Package demo reproduces the failures of the project's seed articles with
// scripted agents, each twice: once behind a bare step counter (what today's
// frameworks do: LangGraph's recursion_limit of 25 steps, here 13 model
// turns and 12 tool calls with every reach guard off) and once behind reach.
// Each scenario reports what happened both ways and the tokens reach saved,
// and keeps its request for the graph.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/agent"
)

// Scenario is one reproduced failure.
type Scenario struct {
	Name    string
	Seed    string // what it reproduces
	Without string // what happened behind the step counter
	Reach   string // what reach did
	// TokensWithout and TokensWith are the model tokens spent both ways.
	TokensWithout, TokensWith int64
	// OK is true when reach did what Reach says (checked by the scenario).
	OK      bool
	Request *reach.Request // the reach run, for the graph
}

// Saved returns the tokens reach saved.
func (s *Scenario) Saved() int64 { return s.TokensWithout - s.TokensWith }

// baseline is a runtime with every reach guard off and a 25-step limit.
func baseline() *reach.Runtime {
	return reach.New(&reach.Options{DisableLoopGuard: true, Authorizer: permitAll{},
		DefaultBudget: &reach.Budget{Turns: 13, ToolCalls: 12}})
}

type permitAll struct{}

func (permitAll) Authorize(context.Context, *reach.Call) (reach.Decision, *reach.Error) {
	return reach.Permit, nil
}

// loose turns off the contract checks for the baseline run.
func loose(t reach.Tool, off bool) reach.Tool {
	if off {
		t.OnViolation = reach.Allow
	}
	return t
}

// Run runs every scenario.
func Run(ctx context.Context) []*Scenario {
	return []*Scenario{
		formatterLoop(ctx),
		livelock(ctx),
		freshBudget(ctx),
		approval(ctx),
		saga(ctx),
		staleRead(ctx),
		cascadingCancel(ctx),
	}
}

func tokens(r *reach.Request) int64 { return r.Usage().Tokens }

// formatterLoop: format_answer asks the model, which calls search_kb, whose
// model calls format_answer again with the same arguments (seed 000).
func formatterLoop(ctx context.Context) *Scenario {
	s := &Scenario{Name: "formatter loop", Seed: "A -> model -> B -> model -> A"}
	run := func(off bool) (*reach.Request, *agent.Outcome, int) {
		rt := reach.New(nil)
		if off {
			rt = baseline()
		}
		depth := 0
		var mu sync.Mutex
		nested := func(next, args string) reach.ToolFunc {
			return func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				mu.Lock()
				depth++
				mu.Unlock()
				inner := &agent.Agent{Runtime: rt, MaxTurns: 1, Model: agent.Script(agent.Turn{Tool: next, Args: args, Tokens: 400})}
				out, err := inner.Run(ctx, "use "+next)
				if err != nil {
					return nil, err
				}
				if len(out.Refusals) > 0 {
					return json.Marshal("could not finish: " + out.Refusals[0])
				}
				return json.Marshal("formatted")
			}
		}
		rt.MustRegister(
			loose(reach.Tool{Name: "format_answer", Reentrancy: reach.Reentrant, Func: nested("search_kb", `{"query":"refund policy"}`)}, off),
			loose(reach.Tool{Name: "search_kb", Reentrancy: reach.Reentrant, Func: nested("format_answer", `{"text":"refund policy"}`)}, off),
		)
		rctx, req, _ := rt.Begin(ctx, nil)
		defer req.End()
		model := agent.Script(agent.Turn{Tool: "format_answer", Args: `{"text":"refund policy"}`, Tokens: 1200}, agent.Turn{Answer: "Here is the refund policy.", Tokens: 300})
		out, _ := (&agent.Agent{Runtime: rt, Model: model}).Run(rctx, "explain the refund policy")
		return req, out, depth
	}
	wreq, _, wdepth := run(true)
	req, out, depth := run(false)
	s.TokensWithout, s.TokensWith, s.Request = tokens(wreq), tokens(req), req
	s.Without = fmt.Sprintf("recursed %d tool calls deep until the step counter ran out", wdepth)
	var refused *reach.Frame
	for _, f := range req.Frames() {
		if f.State() == reach.Refused && f.CycleTo() != nil {
			refused = f
		}
	}
	s.OK = refused != nil && depth == 2 && out.Answer != ""
	s.Reach = "refused the second format_answer at dispatch (cycle at depth 1); the agent answered"
	return s
}

// livelock: a planner hands the same sub-task to an executor, a verifier
// rejects each draft with the same verdict, and round it goes (seed 002).
func livelock(ctx context.Context) *Scenario {
	s := &Scenario{Name: "planner/executor/verifier livelock", Seed: "the same sub-task, the same rejection"}
	run := func(off bool) (*reach.Request, int, string) {
		rt := reach.New(nil)
		if off {
			rt = baseline()
		}
		rt.MustRegister(reach.Tool{Name: "fetch_report", Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"revenue":"1.2B","margin":"18%"}`), nil
		}})
		rctx, req, _ := rt.Begin(ctx, &reach.RequestOptions{Agent: "planner"})
		defer req.End()
		rounds, stop := 0, ""
		for round := 1; round <= 20 && stop == ""; round++ {
			for _, step := range []struct{ agent, task string }{{"executor", "Summarize the Q1 report in 100 words"}, {"verifier", "verify the draft"}} {
				mctx, m, err := rt.BeginModel(rctx, "planner-model")
				if err != nil {
					stop = err.Error()
					break
				}
				m.EndModel(reach.TokenUsage{Input: 600, Text: "delegate: " + step.task})
				sctx, sub, err := rt.Delegate(mctx, &reach.Delegation{Agent: step.agent, Task: step.task})
				if err != nil {
					stop = err.(*reach.Error).Message
					break
				}
				sm, smf, err := rt.BeginModel(sctx, step.agent+"-model")
				if err == nil {
					if step.agent == "executor" {
						rt.Call(sm, &reach.Call{ID: fmt.Sprint("f", round), Tool: "fetch_report", Arguments: json.RawMessage(`{"quarter":"Q1"}`)})
						smf.EndModel(reach.TokenUsage{Input: 900, Text: fmt.Sprintf("draft v%d", round)})
					} else {
						smf.EndModel(reach.TokenUsage{Input: 700, Text: "REJECT: too long"})
					}
				}
				sub.End()
			}
			rounds = round
		}
		return req, rounds, stop
	}
	wreq, wrounds, _ := run(true)
	req, rounds, stop := run(false)
	s.TokensWithout, s.TokensWith, s.Request = tokens(wreq), tokens(req), req
	s.Without = fmt.Sprintf("went %d rounds until the step counter ran out", wrounds)
	s.Reach = "refused the third hand-off of the same sub-task to the executor"
	s.OK = rounds == 3 && strings.Contains(stop, "executor")
	return s
}

// freshBudget: a sub-agent that would start with a fresh default budget is
// held to the share carved from its parent (seed 002).
func freshBudget(ctx context.Context) *Scenario {
	s := &Scenario{Name: "sub-agent budget", Seed: "a sub-agent silently gets a fresh budget"}
	run := func(off bool) (*reach.Request, int) {
		rt := reach.New(nil)
		if off {
			rt = baseline()
		}
		n := 0
		rt.MustRegister(reach.Tool{Name: "search_web", Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			n++
			return json.Marshal(fmt.Sprintf("page %d of results", n))
		}})
		rctx, req, _ := rt.Begin(ctx, &reach.RequestOptions{Budget: &reach.Budget{Turns: 30, ToolCalls: 40, Tokens: 40000}})
		defer req.End()
		var sctx context.Context
		var sub *reach.Request
		if off {
			// What frameworks do: the sub-agent is a new run with the default limit.
			sctx, sub, _ = rt.Begin(ctx, nil)
		} else {
			sctx, sub, _ = rt.Delegate(rctx, &reach.Delegation{Agent: "researcher", Task: "find every source", Fraction: 0.25})
		}
		var turns []agent.Turn
		for i := range 60 {
			turns = append(turns, agent.Turn{Tool: "search_web", Args: fmt.Sprintf(`{"q":"sources page %d"}`, i), Tokens: 1500})
		}
		out, _ := (&agent.Agent{Runtime: rt, Model: agent.Script(turns...)}).Run(sctx, "find every source")
		sub.End()
		if off {
			return sub, out.Turns
		}
		return req, out.Turns
	}
	wreq, wturns := run(true)
	req, turns := run(false)
	s.TokensWithout, s.TokensWith, s.Request = tokens(wreq), tokens(req), req
	s.Without = fmt.Sprintf("the sub-agent ran %d turns on a fresh budget", wturns)
	s.Reach = fmt.Sprintf("stopped the sub-agent after %d turns, inside the quarter it was carved", turns)
	s.OK = turns <= 8 && req.Usage().Tokens <= 12000
	return s
}

// approval: a refund waits for a human, then runs once (seed 003).
func approval(ctx context.Context) *Scenario {
	s := &Scenario{Name: "refund needs approval", Seed: "risky writes ask a human first"}
	q := &queue{}
	rt := reach.New(&reach.Options{Approver: q})
	runs := 0
	rt.MustRegister(reach.Tool{Name: "refund_order", Access: reach.HighRisk, Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		runs++
		return json.RawMessage(`{"refund_id":"RF-1","status":"done"}`), nil
	}})
	rctx, req, _ := rt.Begin(ctx, &reach.RequestOptions{Principal: "alice"})
	defer req.End()
	model := agent.Script(
		agent.Turn{Tool: "refund_order", Args: `{"order_id":"7","amount":30}`},
		agent.Turn{When: "waiting for approval", Answer: "Your refund is waiting for approval."},
	)
	out, _ := (&agent.Agent{Runtime: rt, Model: model}).Run(rctx, "refund order 7")
	q.approve()
	model2 := agent.Script(agent.Turn{Tool: "refund_order", Args: `{"order_id":"7","amount":30}`}, agent.Turn{When: "RF-1", Answer: "Refunded."})
	out2, _ := (&agent.Agent{Runtime: rt, Model: model2}).Run(rctx, "is it approved now?")
	s.TokensWith, s.TokensWithout, s.Request = tokens(req), tokens(req), req
	s.Without = "the refund runs at once, no human asked"
	s.Reach = "held the refund as pending; after approval it ran once"
	s.OK = strings.Contains(out.Answer, "waiting") && out2.Answer == "Refunded." && runs == 1
	return s
}

// queue is a one-approval stand-in for the approval queue.
type queue struct {
	mu       sync.Mutex
	approved bool
}

func (q *queue) approve() { q.mu.Lock(); q.approved = true; q.mu.Unlock() }

func (q *queue) Approve(_ context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.approved {
		return reach.Permit, nil
	}
	return reach.NeedsApproval, &reach.Error{Code: "approval_pending",
		Message:    fmt.Sprintf("%s %s is waiting for approval by a reviewer.", c.Tool, c.Args()),
		Suggestion: "Tell the user it is pending; do not call it again until it is approved."}
}

// saga: a three-step chain fails at the third step; the two writes are
// undone in reverse, and one undo that fails is dead-lettered (seed 001).
func saga(ctx context.Context) *Scenario {
	s := &Scenario{Name: "failed chain compensated", Seed: "a half-done chain is undone"}
	var mu sync.Mutex
	var log []string
	note := func(x string) { mu.Lock(); log = append(log, x); mu.Unlock() }
	ok := func(name string) reach.ToolFunc {
		return func(context.Context, json.RawMessage) (json.RawMessage, error) {
			note(name)
			return json.RawMessage(`{"ref":"R1"}`), nil
		}
	}
	fail := func(name string) reach.ToolFunc {
		return func(context.Context, json.RawMessage) (json.RawMessage, error) {
			note(name + " FAILED")
			return nil, &reach.ToolError{Type: "conflict", Message: "the card was declined"}
		}
	}
	rt := reach.New(nil)
	rt.MustRegister(
		reach.Tool{Name: "book_flight", Access: reach.Write, Func: ok("book_flight"), Undo: &reach.Followup{Tool: "cancel_flight", Args: `{"ref":"{result.ref}"}`}},
		reach.Tool{Name: "book_hotel", Access: reach.Write, Func: ok("book_hotel"), Undo: &reach.Followup{Tool: "cancel_hotel", Args: `{"ref":"{result.ref}"}`}},
		reach.Tool{Name: "charge_card", Access: reach.Write, Func: fail("charge_card")},
		reach.Tool{Name: "cancel_flight", Access: reach.Write, Func: ok("cancel_flight")},
		reach.Tool{Name: "cancel_hotel", Access: reach.Write, Func: fail("cancel_hotel")},
	)
	rctx, req, _ := rt.Begin(ctx, nil)
	defer req.End()
	model := agent.Script(
		agent.Turn{Tool: "book_flight", Args: `{"to":"LIS"}`}, agent.Turn{Tool: "book_hotel", Args: `{"city":"Lisbon"}`},
		agent.Turn{Tool: "charge_card", Args: `{"amount":900}`}, agent.Turn{When: "compensated", Answer: "The booking failed and was rolled back."},
	)
	out, _ := (&agent.Agent{Runtime: rt, Model: model}).Run(rctx, "book my trip")
	mu.Lock()
	got := strings.Join(log, ", ")
	mu.Unlock()
	s.TokensWith, s.TokensWithout, s.Request = tokens(req), tokens(req), req
	s.Without = "flight and hotel stay booked after the card fails"
	s.Reach = "undid the hotel, then the flight; the failed hotel undo went to the dead-letter queue"
	dead, _ := rt.DeadLetters(context.Background(), reach.DeadLetterOpen)
	s.OK = got == "book_flight, book_hotel, charge_card FAILED, cancel_hotel FAILED, cancel_flight" && len(dead) == 1 && out.Answer != ""
	return s
}

// staleRead: read a balance of 100, another agent deducts 50, the first
// deducts 80 on its stale read (seed 001).
func staleRead(ctx context.Context) *Scenario {
	s := &Scenario{Name: "stale balance read", Seed: "a write based on an old read"}
	run := func(off bool) (int, *reach.Request, *reach.Result) {
		rt := reach.New(nil)
		if off {
			rt = baseline()
		}
		balance := 100
		var mu sync.Mutex
		reads, writes := []string{"account:{account}"}, []string{"account:{account}"}
		if off {
			reads, writes = nil, nil
		}
		rt.MustRegister(
			reach.Tool{Name: "get_balance", Reentrancy: reach.Reentrant, Reads: reads, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				mu.Lock()
				defer mu.Unlock()
				return json.Marshal(map[string]int{"balance": balance})
			}},
			reach.Tool{Name: "deduct", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: writes, Func: func(_ context.Context, raw json.RawMessage) (json.RawMessage, error) {
				var a struct{ Amount int }
				json.Unmarshal(raw, &a)
				mu.Lock()
				defer mu.Unlock()
				balance -= a.Amount
				return json.Marshal(map[string]int{"balance": balance})
			}},
		)
		actx, a, _ := rt.Begin(ctx, &reach.RequestOptions{Agent: "agent-a"})
		bctx, b, _ := rt.Begin(ctx, &reach.RequestOptions{Agent: "agent-b"})
		defer a.End()
		defer b.End()
		mctx, m, _ := rt.BeginModel(actx, "m")
		rt.Call(mctx, &reach.Call{ID: "a1", Tool: "get_balance", Arguments: json.RawMessage(`{"account":"A-1"}`)})
		m.EndModel(reach.TokenUsage{Input: 500})
		rt.Call(bctx, &reach.Call{ID: "b1", Tool: "deduct", Arguments: json.RawMessage(`{"account":"A-1","amount":50}`)})
		mctx, m, _ = rt.BeginModel(actx, "m")
		res := rt.Call(mctx, &reach.Call{ID: "a2", Tool: "deduct", Arguments: json.RawMessage(`{"account":"A-1","amount":80}`)})
		m.EndModel(reach.TokenUsage{Input: 500})
		return balance, a, res
	}
	wbalance, wreq, _ := run(true)
	balance, req, res := run(false)
	s.TokensWithout, s.TokensWith, s.Request = tokens(wreq), tokens(req), req
	s.Without = fmt.Sprintf("both deductions ran: the balance is %d", wbalance)
	s.Reach = "refused the deduction of 80: \"" + strings.TrimSuffix(res.Error.Message, ".") + "\""
	s.OK = balance == 50 && res.Error != nil && res.Error.Code == "stale_read"
	return s
}

// cascadingCancel: a runaway multi-agent request is cancelled; every
// sub-agent's calls in flight stop (seed 002).
func cascadingCancel(ctx context.Context) *Scenario {
	s := &Scenario{Name: "cascading cancel", Seed: "cancel does not stop the sub-agents"}
	rt := reach.New(nil)
	var inflight sync.WaitGroup
	var stopped sync.WaitGroup
	var mu sync.Mutex
	seen := 0
	rt.MustRegister(reach.Tool{Name: "crawl", Reentrancy: reach.Reentrant, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		inflight.Done()
		<-ctx.Done()
		mu.Lock()
		seen++
		mu.Unlock()
		stopped.Done()
		return nil, context.Cause(ctx)
	}})
	rctx, req, _ := rt.Begin(ctx, &reach.RequestOptions{ID: "runaway"})
	defer req.End()
	const agents, perAgent = 4, 5
	inflight.Add(agents * perAgent)
	stopped.Add(agents * perAgent)
	var calls sync.WaitGroup
	for a := range agents {
		sctx, _, _ := rt.Delegate(rctx, &reach.Delegation{Agent: fmt.Sprintf("crawler-%d", a), Task: fmt.Sprintf("crawl shard %d", a)})
		mctx, m, _ := rt.BeginModel(sctx, "m")
		m.EndModel(reach.TokenUsage{Input: 800})
		for i := range perAgent {
			calls.Go(func() {
				rt.Call(mctx, &reach.Call{ID: fmt.Sprint(i), Tool: "crawl", Arguments: json.RawMessage(fmt.Sprintf(`{"shard":%d,"page":%d}`, a, i))})
			})
		}
	}
	inflight.Wait()
	start := time.Now()
	req.Stop(reach.Cancel, "operator", "runaway spend")
	stopped.Wait()
	took := time.Since(start)
	calls.Wait()
	children := req.Children()
	allStopped := len(children) == agents
	for _, c := range children {
		allStopped = allStopped && c.State() == reach.RequestStoppedCancel
	}
	s.TokensWith, s.TokensWithout, s.Request = tokens(req), tokens(req), req
	s.Without = "the sub-agents keep crawling after the user cancels"
	s.Reach = fmt.Sprintf("cancelled %d calls in %d sub-agents within %s", agents*perAgent, agents, took.Round(time.Millisecond/10))
	s.OK = seen == agents*perAgent && allStopped
	return s
}

// Table writes the scenarios as a table.
func Table(ss []*Scenario) string {
	var b strings.Builder
	rows := [][]string{{"scenario", "without reach (step counter)", "with reach", "tokens saved", "ok"}}
	for _, s := range ss {
		ok := "yes"
		if !s.OK {
			ok = "NO"
		}
		rows = append(rows, []string{s.Name, s.Without, s.Reach, fmt.Sprint(s.Saved()), ok})
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for n, r := range rows {
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(c + strings.Repeat(" ", widths[i]-len([]rune(c))))
		}
		b.WriteString("\n")
		if n == 0 {
			total := 0
			for _, w := range widths {
				total += w + 2
			}
			b.WriteString(strings.Repeat("-", total-2) + "\n")
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// Slug names a scenario's file.
func Slug(s *Scenario) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(s.Name))
}
