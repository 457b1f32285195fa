package reach

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/agentreach/reach/internal/loops"
)

func (rt *Runtime) detector(r *Request) *loops.Detector {
	if rt.opts.DisableLoopGuard {
		return nil
	}
	return r.root.loops.Get(rt.opts.Loops)
}

// loopGuard (5): repetition without progress (L1-L3).
func (rt *Runtime) loopGuard(next Handler) Handler {
	if rt.opts.DisableLoopGuard {
		return next
	}
	return func(ctx context.Context, c *Call) (*Result, error) {
		d := rt.detector(c.req)
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

// loopDone tells the loop guard what a call it admitted produced. The
// guard reads the result after the call returns, off its path: the
// detector holds a copy of what it reads (HoldTool) and applies it before
// it judges or records anything else of the request, or a goroutine of
// its own applies it first (heldDones). Its reading of the answer (its
// units, its canonical JSON, its failure shapes) was most of the loop
// guard's time on a served call, between the upstream's answer and the
// client's.
func (rt *Runtime) loopDone(c *Call, res *Result, err error) {
	if !c.stepped {
		return
	}
	if d := rt.detector(c.req); d.HoldTool(&c.lstep, res, err) {
		heldDones.add(d)
	}
}

// heldDones applies the outcomes the requests' detectors hold, on a
// goroutine that runs while there are some and then ends: the next call
// of the request (or anything else its detector does) finds them
// applied, or applies them itself first.
var heldDones = doneQueue{queue: make(chan *loops.Detector, 256)}

type doneQueue struct {
	queue   chan *loops.Detector
	running atomic.Bool
	hook    atomic.Pointer[func(*loops.Detector)] // tests: called before a detector's outcomes are applied
}

// add has d's outcomes held applied by the queue's goroutine, started if
// none runs; with the queue full, here.
func (q *doneQueue) add(d *loops.Detector) {
	select {
	case q.queue <- d:
	default:
		d.Flush()
		return
	}
	if !q.running.Load() && q.running.CompareAndSwap(false, true) {
		go applyHeldDones()
	}
}

// applyHeldDones is the queue's goroutine (a function of no value, so
// that starting it allocates nothing).
func applyHeldDones() {
	q := &heldDones
	for {
		select {
		case d := <-q.queue:
			if h := q.hook.Load(); h != nil {
				(*h)(d)
			}
			d.Flush()
		default:
			q.running.Store(false)
			// A detector added after the queue was found empty, whose
			// add saw this goroutine still running: run on for it,
			// unless another goroutine has started.
			if len(q.queue) == 0 || !q.running.CompareAndSwap(false, true) {
				return
			}
		}
	}
}

// loopModel checks a model frame before it starts.
func (rt *Runtime) loopModel(f *Frame) *Error {
	d := rt.detector(f.Request)
	if d == nil {
		return nil
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
	d := rt.detector(f.Request)
	if d == nil {
		return nil
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
	rt.detector(f.Request).Done(s, o)
}
