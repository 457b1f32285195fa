package modelproxy

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
)

// Limiter is the token buckets of model turns (R8): a
// *ratelimit.Limiter.
type Limiter interface {
	// Allow takes a token for principal's turn of priority, or says how
	// long until one is back and which bucket is empty.
	Allow(principal string, priority int) (time.Duration, string)
}

// refuseRate refuses a turn past the model's rate limits, before it is
// begun: it reaches no model and spends none of its request's turns. The
// answer is one no SDK retries (every one retries a 429, and the openai
// SDKs' own retries would take the turn again at once): a 403 with
// x-should-retry: false, its text saying which bucket and when a turn may
// pass, Retry-After saying it in seconds too.
func (p *Proxy) refuseRate(ctx context.Context, w http.ResponseWriter, req *reach.Request, model, route string) bool {
	l := p.opts.Limits
	if l == nil {
		return false
	}
	wait, bucket := l.Allow(req.Principal(), req.Priority())
	if wait <= 0 {
		return false
	}
	secs := int64(math.Ceil(wait.Seconds()))
	msg := fmt.Sprintf("Too many model calls (%s rate limit): this turn was not sent to the model.", bucket)
	next := fmt.Sprintf("Try again in %ds, or make fewer model calls.", secs)
	// Recorded as the other refusals are: a model frame of the request,
	// refused, and its audit event; no turn counted.
	if mr, ok := p.opts.Models.(ModelRefuser); ok {
		e := &reach.Error{Guard: "limit", Type: reach.TypeRateLimit, Code: "rate_limited", Message: msg, Suggestion: next, RetryAfter: wait}
		mr.RefuseModelTurn(reach.WithRoute(ctx, route), model, e)
	}
	p.log.Info("model turn refused for its rate limit", "request", req.ID(), "bucket", bucket, "retry_after", wait)
	w.Header().Set(link.HeaderRequest, req.ID())
	w.Header().Set("X-Should-Retry", "false")
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	proxyError(w, http.StatusForbidden, "rate_limit_exceeded", "rate_limited",
		msg+" "+next)
	return true
}

// ModelRefuser records a model turn refused before it was begun: a
// *reach.Runtime (RefuseModelTurn).
type ModelRefuser interface {
	RefuseModelTurn(ctx context.Context, model string, e *reach.Error) *reach.Error
}
