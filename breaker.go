package reach

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentreach/reach/internal/breaker"
	"github.com/agentreach/reach/internal/effects"
	"github.com/agentreach/reach/internal/template"
)

// Breaker returns the runtime's breaker of that kind and name, made with
// policy p (over Options.Breaker) when it is first asked for; a later p
// that is not nil replaces its policy. The runtime keeps the breakers of
// its tools (kind "tool") and upstreams ("upstream") itself; other parts
// use other kinds, such as "model".
func (rt *Runtime) Breaker(kind, name string, p *BreakerPolicy) *Breaker {
	return rt.breakers.Get(kind, name, p, p != nil)
}

// Breakers returns the status of every breaker of the runtime, sorted by
// kind and name.
func (rt *Runtime) Breakers() []BreakerStatus { return rt.breakers.Statuses() }

// newBreakers is the runtime's registry of breakers: a change of state is
// logged and recorded (Event.Breaker) with the request of the call that
// made it, and a failure is kept masked, with whose call it was: a
// refusal tells it to that principal in its tenant only.
func (rt *Runtime) newBreakers() *breaker.Registry[*Request] {
	return breaker.NewRegistry(rt.opts.Breaker, breaker.Hooks[*Request]{
		RequestOf: func(ctx context.Context) *Request { r, _ := position(ctx); return r },
		Describe:  func(err error) string { return rt.opts.Redactor.RedactString(oneLine(err.Error(), 400)) },
		Owner:     breakerOwner,
		Changed:   rt.breakerChanged,
	})
}

// breakerOwner is whose request r is, for a breaker's last failure: its
// root's principal in its tenant ("" without a request).
func breakerOwner(r *Request) string {
	if r == nil {
		return ""
	}
	return r.root.tenant + "\x00" + r.root.principal
}

// BreakerErrorFor reports whether a view of the breaker s (/healthz, the
// tools page) may show its last failure (LastError) to principal in
// tenant, when that caller is not a global operator (who sees every one):
// it was what a call of that principal in that tenant said. Another
// principal's call's failure is its own, and one of no request (a program
// embedding the runtime that reports to a breaker outside any request: a
// health check, a connection that failed) is a global operator's: it may
// name a host, a path or an account of any tenant. Every caller sees that
// the breaker is open, since when and when it lets a probe through. A
// refusal tells the last failure to the same owner only, too.
func BreakerErrorFor(s BreakerStatus, principal, tenant string) bool {
	return s.LastBy != "" && s.LastBy == tenant+"\x00"+principal
}

// breakerChanged logs and records a breaker's change of state.
func (rt *Runtime) breakerChanged(b *Breaker, req *Request, ch *BreakerChange) {
	lvl := rt.log.Info
	if ch.To == BreakerOpen {
		lvl = rt.log.Warn
	}
	lvl("circuit breaker "+ch.To.String(), "breaker", ch.Kind, "name", ch.Name, "from", ch.From.String(), "reason", ch.Reason)
	if rt.opts.Recorder == nil {
		return
	}
	e := &Event{Time: ch.At, Name: ch.Kind + ":" + ch.Name, Breaker: ch}
	if req != nil {
		e.Root, e.Trace, e.Request, e.Principal, e.Tenant, e.Agent = req.root.id, req.root.trace, req.id, req.principal, req.tenant, req.agent
	}
	rt.opts.Recorder.Record(context.Background(), e)
}

// passes are a call's admissions through its tool's and its upstream's
// breakers, for the attempt about to run.
type passes = breaker.Pair[*Request]

// admitBreakers admits an attempt of c through its tool's breaker and its
// upstream's, or returns the error of the one that is open, naming what
// the model may use instead.
func (rt *Runtime) admitBreakers(c *Call) (passes, *Error) {
	ps, b, s := breaker.LetBoth(c.tool.ToolBreaker, c.tool.UpstreamBreaker, c.req)
	if s == nil {
		return ps, nil
	}
	what := "it"
	if b.Kind() == BreakerUpstream {
		what = "its upstream " + b.Name()
	}
	now := time.Now()
	e := s.Refusal(c.Tool, what, now)
	e.Alternatives = rt.tools.HealthyAlternatives(c.tool, now)
	e.Suggestion = s.Suggest(c.Tool, e.Alternatives)
	return passes{}, e
}

// breakerStage (before execute, 11): a call whose tool's or upstream's
// breaker is open fails at once, with type unavailable, and runs nothing;
// one let through carries its passes to execute, which reports each
// attempt. Inside the saga stage: a write that fails here is compensated
// for as its failure would have been.
func (rt *Runtime) breakerStage(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		ps, e := rt.admitBreakers(c)
		if e != nil {
			return &Result{Status: StatusError, Error: e}, nil
		}
		c.passes = ps
		res, err := next(ctx, c)
		c.passes.Abandon() // a middleware that did not run the tool
		return res, err
	}
}

// fallbackStage (between 9 and 10, on the way back): a read whose call
// failed transiently after its retries, or met an open breaker, is
// answered by its first healthy fallback that succeeds.
func (rt *Runtime) fallbackStage(next Handler) Handler {
	return func(ctx context.Context, c *Call) (*Result, error) {
		res, err := next(ctx, c)
		if err != nil || res == nil || res.Status != StatusError || len(c.tool.Fallbacks) == 0 || c.tool.Access != Read ||
			res.Error == nil || (res.Error.Type != TypeUnavailable && res.Error.Type != TypeTransient) || ctx.Err() != nil {
			return res, err
		}
		return rt.fallback(ctx, c, res), nil
	}
}

// fallback calls c's fallbacks in order, skipping those whose breakers are
// open, each as a call of its own under c's frame, and returns the first
// success, marked as the fallback's; if none succeeds, failed, with a note
// of what was tried.
func (rt *Runtime) fallback(ctx context.Context, c *Call, failed *Result) *Result {
	var tried []string
	fctx := withFrame(ctx, c.frame)
	for i, f := range c.tool.Fallbacks {
		ft := rt.lookup(f.Tool)
		switch {
		case ft == nil:
			tried = append(tried, f.Tool+" (no such tool)")
			continue
		case ft.Access != Read:
			tried = append(tried, f.Tool+" (not a read)")
			continue
		case !ft.Healthy(time.Now()):
			tried = append(tried, f.Tool+" (unavailable too)")
			continue
		}
		args := c.args
		if f.Args != nil {
			a, err := f.Args.JSON(template.NewScope(c.args, nil))
			if err != nil {
				tried = append(tried, fmt.Sprintf("%s (its arguments could not be built: %v)", f.Tool, err))
				continue
			}
			args = a
		}
		res := rt.Call(fctx, &Call{ID: fmt.Sprintf("%s/fallback/%d", c.ID, i+1), Tool: f.Tool, Arguments: args, Why: "fallback of " + c.Tool})
		if res.Status == StatusSuccess {
			out := &Result{Status: StatusSuccess, Data: res.Data, Fallback: f.Tool,
				Summary: cmp.Or(res.Summary, "answered by its fallback "+f.Tool)}
			out.Notes = append(out.Notes, effects.FallbackNote(c.Tool, f.Tool, failed.Error))
			out.Notes = append(out.Notes, res.Notes...)
			return out
		}
		if res.Status == StatusCancelled || ctx.Err() != nil {
			return res
		}
		why := string(res.Status)
		if res.Error != nil {
			why = res.Error.Code
		}
		tried = append(tried, f.Tool+" ("+why+")")
	}
	failed.Notes = append(failed.Notes, "its fallbacks did not answer either: "+strings.Join(tried, ", "))
	return failed
}
