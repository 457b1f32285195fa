package reach

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/budget"
	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/loops"
)

// node is f as the graph checks read it (callgraph.Stack).
func node(f *Frame) callgraph.Node[*Frame] {
	n := callgraph.Node[*Frame]{Up: f.Parent, Kind: f.Kind, Name: f.Name, Agent: f.Agent, Args: f.Args, Depth: f.Depth,
		Live: f.State() != Refused, Mark: &f.mark}
	if f.mark.Adopted {
		n.Handed = agentOrMain(f.Agent) // another runtime's frame: the agent that made it
	} else {
		n.Handed = agentOrMain(loopAgent(f.Request))
	}
	return n
}

// checkAgent is the graph check of the hand-off f to a (G2, G3;
// callgraph.CheckAgent). In warn mode the violation is noted on the frame
// and the hand-off goes on.
func (rt *Runtime) checkAgent(f *Frame, a *callgraph.Agent) *Error {
	if a.On == Allow {
		return nil
	}
	hit, e := callgraph.CheckAgent(node, f, a, f.Request.root.agent)
	if e == nil {
		return nil
	}
	f.mu.Lock()
	f.cycleTo = hit
	if a.On == Warn {
		f.warn = append(f.warn, rt.opts.Redactor.RedactString("warning: "+e.Message))
		e = nil
	}
	f.mu.Unlock()
	return e
}

// DelegateRecorder is a RequestRecorder told when the delegate frame of a
// hand-off ends (its sub-request r answered, failed, was stopped or
// cancelled; r.DelegateFrame() is final), once, before r's end is
// recorded: a store that keeps the frame for other runtimes (their
// depth and cycle checks of hand-offs placed under it) ends it there, so
// that no row of a hand-off that is over stands as one that runs.
type DelegateRecorder interface {
	DelegateEnded(ctx context.Context, r *Request)
}

// SharedUsage is a RequestRecorder whose requests other runtimes spend
// from too (several gateway instances on one store): SharedUsage returns
// what r has spent on all of them together (turns, tool calls, tokens,
// cost), as their shared ledger keeps it. Delegate carves a hand-off's
// budget from what r has left after it, not after this runtime's part
// alone, as one runtime carves it from what the request has left.
type SharedUsage interface {
	SharedUsage(ctx context.Context, r *Request) (Usage, error)
}

// leftOf is what r has left to carve a hand-off's budget from: after what
// this runtime spent of it, and what every runtime that shares it spent
// (SharedUsage), whichever is more in each dimension. The shared ledger
// is asked only when r's budget limits something it counts; if it does
// not answer, r's part here is what counts, as before. It refuses
// (budget_tokens, budget_cost) when r's tokens or cost are spent on all
// of them together, as admitFrame refuses what this runtime spent: a
// hand-off, or a further message to one, from a request with nothing
// left is refused on any instance, not only on the one that spent it.
func (rt *Runtime) leftOf(ctx context.Context, r *Request) (Budget, *Error) {
	u := r.Usage()
	l := r.meter.Limit
	sh, ok := rt.opts.Requests.(SharedUsage)
	if !ok || l.Turns <= 0 && l.ToolCalls <= 0 && l.Tokens <= 0 && l.Cost <= 0 {
		return budget.Remaining(l, u), nil
	}
	all, err := sh.SharedUsage(ctx, r)
	if err != nil {
		rt.log.Warn("the shared spend of a request not read: a hand-off from it is admitted and carved by what this instance's part of it spent", "request", r.id, "err", err)
		return budget.Remaining(l, u), nil
	}
	u.Turns, u.ToolCalls = max(u.Turns, all.Turns), max(u.ToolCalls, all.ToolCalls)
	u.Tokens, u.Cost = max(u.Tokens, all.Tokens), max(u.Cost, all.Cost)
	switch {
	case l.Tokens > 0 && u.Tokens >= l.Tokens:
		return Budget{}, budgetError("tokens", r, &r.meter, fmt.Sprintf("%d tokens used of %d", u.Tokens, l.Tokens))
	case l.Cost > 0 && u.Cost >= l.Cost:
		return Budget{}, budgetError("cost", r, &r.meter, fmt.Sprintf("cost %.4f of %.4f", u.Cost, l.Cost))
	}
	return budget.Remaining(l, u), nil
}

// Continue admits a further message to the agent of the hand-off r (a
// sub-request Delegate began) whose task waits for input: the checks a
// new hand-off passes, in the caller's request (the parent of r). Both
// requests are running and within their budgets (admit), and the loop
// guard judges the message as a hand-off of it to the agent: the same
// message (or a rewording of it) sent a third time, when the rounds came
// back with the same answer and nothing was written in between, is
// refused. A refusal is recorded as a refused delegate frame in the
// caller's request, beside the hand-off's. done tells the loop guard what
// the round came back with: the agent's answer when the task stops again
// (waiting for input again, or final), or failed (the round broke, was
// canceled, or failed).
func (r *Request) Continue(ctx context.Context, message string) (done func(answer string, failed bool), err error) {
	hf, parent := r.delegate, r.parent
	if hf == nil || parent == nil {
		return nil, fmt.Errorf("continue: request %s is no hand-off", r.id)
	}
	rt := r.rt
	f := &Frame{ID: newFrameID(), Kind: DelegateFrame, Name: hf.Name, Agent: parent.agent,
		Parent: hf.Parent, Request: parent, Started: time.Now(), Args: jsonString(message), Depth: hf.Depth}
	f.mark.Filter = hf.mark.Filter
	refuse := func(e *Error) error {
		parent.addFrame(f)
		return rt.refuseFrame(ctx, f, e)
	}
	if e := rt.admitFrame(ctx, parent, hf.Depth); e != nil {
		return nil, refuse(e)
	}
	if _, e := rt.leftOf(ctx, parent); e != nil {
		return nil, refuse(e)
	}
	if e := rt.admitFrame(ctx, r, 0); e != nil {
		return nil, refuse(e)
	}
	d, e := rt.detector(parent)
	if e != nil {
		return nil, refuse(e)
	}
	if d == nil {
		rt.letThrough(ctx, parent, false) // a hand-off let through, as Delegate's
		return func(string, bool) {}, nil
	}
	s := &loops.Step{Kind: loops.Delegation, Agent: loopAgent(parent), Depth: hf.Depth, To: hf.Name, Task: message}
	if v := d.Check(s); v != nil {
		return nil, refuse(v.Refusal())
	}
	rt.letThrough(ctx, parent, false)
	var once sync.Once
	return func(answer string, failed bool) {
		once.Do(func() {
			o := loops.Outcome{Result: loops.Text(answer)}
			if failed {
				o = loops.Outcome{Refused: true}
			}
			if d := rt.admitted(parent); d != nil {
				d.Done(s, o)
			}
		})
	}, nil
}
