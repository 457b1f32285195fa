package loopbench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentreach/reach"
)

// upstreamTag is the tag that names a tool's upstream, policy.UpstreamTag
// (not imported: the benchmark stays clear of the policy engine).
const upstreamTag = "upstream:"

// Options configure a run. A nil *Options means defaults.
type Options struct {
	// Runtime, if not nil, makes the runtime each trace replays through (it
	// must register no tools: the trace's are registered). If nil,
	// reach.New with unlimited budgets.
	Runtime func() *reach.Runtime
	// Progress, if not nil, is called after each trace.
	Progress func(done, total int)
}

// Run replays every trace through the runtime and computes the baselines.
func Run(traces []*Trace, opts *Options) *Report {
	var o Options
	if opts != nil {
		o = *opts
	}
	r := &Report{Traces: traces, Flags: map[string][]Flag{}, Detectors: []string{"reach"}}
	for i, t := range traces {
		r.Flags["reach"] = append(r.Flags["reach"], Replay(t, o.Runtime))
		for _, b := range Baselines {
			r.Flags[b.Name] = append(r.Flags[b.Name], b.Run(t))
		}
		if o.Progress != nil {
			o.Progress(i+1, len(traces))
		}
	}
	for _, b := range Baselines {
		r.Detectors = append(r.Detectors, b.Name)
	}
	return r
}

// open is an event whose frame is still open: a tool call blocked in its
// Func, or a delegation's sub-request.
type open struct {
	index   int
	ctx     context.Context // where its children go
	release chan struct{}   // tool calls: let the Func return
	done    chan *reach.Result
	sub     *reach.Request // delegations
}

// Replay runs one trace through a runtime, event by event in file order,
// the way live traffic would reach it: model events are model frames (with
// their tokens, and their text once they end), tool calls are calls of tools
// registered from the trace's contract table whose Func returns the
// recorded result, delegations are sub-requests. A tool call stays open (its
// Func blocked) while its descendants run. The first event the runtime
// refuses is the flag.
func Replay(t *Trace, newRuntime func() *reach.Runtime) Flag {
	ds := replay(t, newRuntime, true)
	for _, d := range ds {
		if d.Refused {
			id := d.ID
			return Flag{ID: t.ID, Flagged: &id, Reason: d.Reason}
		}
	}
	if len(ds) > 0 && ds[len(ds)-1].ID == "" {
		return Flag{ID: t.ID, Reason: ds[len(ds)-1].Reason}
	}
	return Flag{ID: t.ID}
}

// Decision is what the runtime decided about one event of a replay.
type Decision struct {
	ID      string `json:"id"`
	Refused bool   `json:"refused"`
	Reason  string `json:"reason,omitempty"`
	Code    string `json:"code,omitempty"` // the refusal's code (approval_required: held for a human)
}

// Decisions replays the whole trace and returns the runtime's decision on
// every event: a refused event is not dispatched (nor are its
// descendants), and the replay goes on with the next event. It is the
// what-if of a policy or guard change (A3): compare with the recorded
// decisions.
func Decisions(t *Trace, newRuntime func() *reach.Runtime) []Decision {
	return replay(t, newRuntime, false)
}

func replay(t *Trace, newRuntime func() *reach.Runtime, stopAtFirst bool) (out []Decision) {
	if len(t.Events) == 0 {
		return nil // nothing to decide
	}
	var rt *reach.Runtime
	if newRuntime != nil {
		rt = newRuntime()
	} else {
		// The benchmark measures loop detection: every recorded call was
		// allowed when it was made, so permissions and budgets stay out.
		rt = reach.New(&reach.Options{DefaultBudget: &reach.Budget{}, Authorizer: permitAll{}})
	}
	entered := make(chan context.Context)
	var mu sync.Mutex
	release := map[string]chan struct{}{}
	byID := map[string]*Event{}
	for i := range t.Events {
		byID[t.Events[i].ID] = &t.Events[i]
	}
	fn := func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		f, _ := reach.FrameFrom(ctx)
		e := byID[f.CallID]
		mu.Lock()
		rel := release[e.ID]
		mu.Unlock()
		entered <- ctx
		<-rel
		if e.Status == "error" {
			return nil, &reach.ToolError{Type: e.ErrorType, Message: resultText(e.Result)}
		}
		if len(e.Result) == 0 {
			return json.RawMessage("null"), nil
		}
		return e.Result, nil
	}
	var tools []reach.Tool
	names := make([]string, 0, len(t.Tools))
	for name := range t.Tools {
		names = append(names, name)
	}
	for _, e := range t.Events {
		if _, ok := t.Tools[e.Tool]; e.Type == "tool_call" && !ok && !slices.Contains(names, e.Tool) {
			names = append(names, e.Tool) // undeclared tools get the defaults
		}
	}
	slices.Sort(names)
	for _, name := range names {
		c := t.Tools[name]
		var tags []string
		if c.Upstream != "" {
			tags = []string{upstreamTag + c.Upstream}
		}
		tools = append(tools, reach.Tool{Name: name, Access: reach.Access(c.Access), Reentrancy: reach.Reentrancy(c.Reentrancy),
			Key: c.Key, Retryable: c.Retryable, Func: fn, Timeout: time.Hour, Tags: tags,
			// The trace is the record of what happened: the harness replays
			// each attempt as the agent made it, so the runtime must not add
			// attempts of its own.
			Retry: &reach.RetryPolicy{Attempts: 1}})
	}
	if err := rt.Register(tools...); err != nil {
		return []Decision{{Reason: "cannot register the trace's tools: " + err.Error()}}
	}
	ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: t.ID, Agent: agentOf(&t.Events[0]),
		Principal: t.Principal, Tenant: t.Tenant})
	if err != nil {
		return []Decision{{Reason: err.Error()}}
	}
	defer req.End()

	var stack []*open
	ctxOf := map[string]context.Context{}
	closeTop := func() {
		o := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if o.release != nil {
			close(o.release)
			<-o.done
		}
		if o.sub != nil {
			o.sub.End()
		}
	}
	defer func() {
		for len(stack) > 0 {
			closeTop()
		}
	}()
	refused := map[string]bool{}
	decide := func(i int, reason, code string) bool {
		out = append(out, Decision{ID: t.Events[i].ID, Refused: reason != "", Reason: reason, Code: code})
		if reason != "" {
			refused[t.Events[i].ID] = true
		}
		return reason != "" && stopAtFirst
	}
	for i := range t.Events {
		e := &t.Events[i]
		if p := e.ParentID(); p != "" && refused[p] {
			refused[e.ID] = true // never dispatched: its cause was refused
			continue
		}
		// Close every open frame that is not an ancestor of this event.
		anc := map[int]bool{}
		for _, a := range t.ancestors(i) {
			anc[a] = true
		}
		for len(stack) > 0 && !anc[stack[len(stack)-1].index] {
			closeTop()
		}
		parent := ctx
		if p := e.ParentID(); p != "" {
			if c, ok := ctxOf[p]; ok {
				parent = c
			}
		}
		switch e.Type {
		case "model":
			mctx, m, err := rt.BeginModel(parent, "model")
			if err != nil {
				if decide(i, refusalText(err), codeOf(err)) {
					return out
				}
				continue
			}
			m.EndModel(reach.TokenUsage{Input: e.Tokens, Text: e.Text})
			ctxOf[e.ID] = mctx
			decide(i, "", "")
		case "delegate":
			sctx, sub, err := rt.Delegate(parent, &reach.Delegation{Agent: e.To, Task: e.Task, ID: t.ID + "/" + e.ID})
			if err != nil {
				if decide(i, refusalText(err), codeOf(err)) {
					return out
				}
				continue
			}
			ctxOf[e.ID] = sctx
			stack = append(stack, &open{index: i, ctx: sctx, sub: sub})
			decide(i, "", "")
		case "tool_call":
			o := &open{index: i, release: make(chan struct{}), done: make(chan *reach.Result, 1)}
			mu.Lock()
			release[e.ID] = o.release
			mu.Unlock()
			args := e.Args
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			go func() {
				o.done <- rt.Call(parent, &reach.Call{ID: e.ID, Tool: e.Tool, Arguments: args})
			}()
			select {
			case hctx := <-entered:
				o.ctx = hctx
				ctxOf[e.ID] = hctx
				stack = append(stack, o)
				decide(i, "", "")
			case res := <-o.done:
				// Returned without running its Func: the runtime refused it.
				code := ""
				if res.Error != nil {
					code = res.Error.Code
				}
				if decide(i, res.ModelText(), code) {
					return out
				}
			}
		}
	}
	return out
}

type permitAll struct{}

func (permitAll) Authorize(context.Context, *reach.Call) (reach.Decision, *reach.Error) {
	return reach.Permit, nil
}

func refusalText(err error) string {
	if e, ok := err.(*reach.Error); ok {
		return e.ModelText()
	}
	return err.Error()
}

func codeOf(err error) string {
	if e, ok := err.(*reach.Error); ok {
		return e.Code
	}
	return ""
}

func resultText(r json.RawMessage) string {
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	return string(r)
}

// Export writes a recorded request (and its sub-requests) as a trace, so a
// real request can be replayed through the benchmark. The label is left
// for a person to fill in.
func Export(req *reach.Request, tools []reach.Tool) *Trace {
	t := &Trace{ID: req.ID(), Tools: map[string]ToolContract{}, Label: Label{Kind: "unlabelled"}}
	for _, tl := range tools {
		t.Tools[tl.Name] = ToolContract{Access: string(tl.Access), Reentrancy: string(tl.Reentrancy), Key: tl.Key, Retryable: tl.Retryable}
	}
	var frames []*reach.Frame
	var walk func(r *reach.Request)
	walk = func(r *reach.Request) {
		frames = append(frames, r.Frames()...)
		for _, c := range r.Children() {
			walk(c)
		}
	}
	walk(req)
	slices.SortStableFunc(frames, func(a, b *reach.Frame) int { return a.Started.Compare(b.Started) })
	ids := map[reach.FrameID]string{}
	for i, f := range frames {
		ids[f.ID] = "e" + strconv.Itoa(i+1)
	}
	for _, f := range frames {
		e := Event{ID: ids[f.ID], Agent: f.Agent}
		if f.Parent != nil {
			if p, ok := ids[f.Parent.ID]; ok {
				e.Parent = &p
			}
		}
		switch f.Kind {
		case reach.ModelFrame:
			e.Type, e.Tokens, e.Text = "model", f.Tokens(), f.Text()
		case reach.DelegateFrame:
			e.Type, e.To = "delegate", f.Name
			json.Unmarshal(f.Args, &e.Task)
		default:
			e.Type, e.Tool, e.Args = "tool_call", f.Name, f.Args
			e.Status = "ok"
			e.Result = f.Result()
			if err := f.Err(); err != nil {
				e.Status, e.ErrorType = "error", err.Code
				e.Result, _ = json.Marshal(err.Message)
			}
		}
		t.Events = append(t.Events, e)
	}
	if err := t.check(); err != nil {
		panic(fmt.Sprintf("loopbench: exported an inconsistent trace: %v", err)) // a bug in Export
	}
	return t
}
