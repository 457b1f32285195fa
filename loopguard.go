package reach

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/loops"
)

// detector returns the detector that judges a new step of r's tree, or
// nil with the loop guard off. A tree that ended let its detector go
// (loops.Lazy.Release): a step that reaches the guard after that, admitted
// before its request ended (a stop ending it meanwhile), gets none, and
// the refusal of its request as it now stands (letGo). Before, it was
// judged afresh by a new, empty detector, and went on.
func (rt *Runtime) detector(r *Request) (*loops.Detector, *Error) {
	if rt.opts.DisableLoopGuard {
		return nil, nil
	}
	if d := r.root.loops.Get(rt.opts.Loops); d != nil {
		return d, nil
	}
	return nil, rt.letGo(r)
}

// letGo is the refusal of a new step of r, whose tree ended and let its
// loop detector go: as the admit check refuses it now (stopped, ended).
func (rt *Runtime) letGo(r *Request) *Error {
	if e := rt.admitFrame(context.Background(), r, 0); e != nil {
		return e
	}
	// Not reached: a tree lets its detector go once every request of it ended.
	return fault.Cancelled(&Error{Guard: "admit", Type: TypeStopped, Code: "request_ended",
		Message:    fmt.Sprintf("Request %s has ended.", r.id),
		Suggestion: "Begin a new request for new work."})
}

// admitted is the detector a step the loop guard admitted for r's tree
// reports its outcome to: the tree's, or nil once the tree ended and let
// it go (loops.Lazy.Release). The step points into the state of the one
// that admitted it; a report to a new one would write that state under
// another lock, racing every other step that answers late.
func (rt *Runtime) admitted(r *Request) *loops.Detector {
	if rt.opts.DisableLoopGuard {
		return nil
	}
	return r.root.loops.Live()
}

// loopGuard (5): repetition without progress (L1-L3).
func (rt *Runtime) loopGuard(next Handler) Handler {
	if rt.opts.DisableLoopGuard {
		return next
	}
	return func(ctx context.Context, c *Call) (*Result, error) {
		d, e := rt.detector(c.req)
		if e != nil {
			return nil, e
		}
		c.lstep = loops.Step{Kind: loops.ToolCall, Agent: loopAgent(c.req), Depth: c.frame.Depth - 1, Tool: c.Tool,
			Args: c.args, Access: string(c.tool.Access), Retryable: c.tool.Retryable, Key: c.tool.Key}
		s := &c.lstep // the call's own: no allocation of its own
		if v := d.Check(s); v != nil {
			return nil, v.Refusal()
		}
		c.stepped = true
		return next(ctx, c)
	}
}

// loopDone tells the loop guard what a call it admitted produced.
func (rt *Runtime) loopDone(c *Call, res *Result, err error) {
	if !c.stepped {
		return
	}
	if d := rt.admitted(c.req); d != nil {
		d.DoneTool(&c.lstep, res, err)
	}
}

// loopModel checks a model frame before it starts.
func (rt *Runtime) loopModel(f *Frame) *Error {
	d, e := rt.detector(f.Request)
	if d == nil {
		return e
	}
	s := &loops.Step{Kind: loops.ModelCall, Agent: loopAgent(f.Request), Depth: f.Depth}
	if v := d.Check(s); v != nil {
		return v.Refusal()
	}
	f.step = s
	return nil
}

// loopDelegate checks a hand-off before the sub-request starts. With
// stack, the loop guard also sees the delegation stack ("delegation_cycle");
// without, the graph stage has judged a re-entry under the agent's own
// contract (reentrant, keyed, warn or allow), which the loop guard must
// not overrule.
func (rt *Runtime) loopDelegate(f *Frame, task string, stack bool) *Error {
	d, e := rt.detector(f.Request)
	if d == nil {
		return e
	}
	s := &loops.Step{Kind: loops.Delegation, Agent: loopAgent(f.Request), Depth: f.Depth, To: f.Name, Task: task}
	if stack {
		s.Chain = chainOf(f.Request)
	}
	if v := d.Check(s); v != nil {
		return v.Refusal()
	}
	f.step = s
	return nil
}

// chainOf returns the agents on r's delegation stack, outermost first: the
// root request's agent and each sub-request's down to r, or nil for a root
// request.
func chainOf(r *Request) []string {
	if r == nil || r.parent == nil {
		return nil
	}
	var out []string
	for q := r; q != nil; q = q.parent {
		out = append(out, agentOrMain(loopAgent(q)))
	}
	slices.Reverse(out)
	return out
}

// loopAgent is the agent the loop guard tells r's work apart by: a
// sub-request's agent (a delegation's, as configured), or "" (the main
// agent) for a root request, whose agent is only the name its client
// library gives itself and never appears in a refusal.
func loopAgent(r *Request) string {
	if r == nil || r.parent == nil {
		return ""
	}
	return r.agent
}

func agentOrMain(a string) string {
	if a == "" {
		return "main"
	}
	return a
}

// loopFrameDone reports a model frame's text, or a delegation's verdict.
func (rt *Runtime) loopFrameDone(f *Frame, text string, failed bool) {
	s, ok := f.step.(*loops.Step)
	if !ok {
		return
	}
	o := loops.Outcome{Result: loops.Text(text)}
	if failed {
		o = loops.Outcome{Refused: true}
	}
	if d := rt.admitted(f.Request); d != nil {
		d.Done(s, o)
	}
}
