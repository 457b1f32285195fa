package modelproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentreach/reach/internal/link"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	neturl "net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/openai"
)

// HeaderFallback, on a model proxy answer, names the endpoint that
// answered in place of the configured model (model.fallbacks).
const HeaderFallback = "Reach-Model-Fallback"

// endpoint is where the model proxy sends a chat completion: the
// configured model's endpoint, or one of its fallbacks. Each has a
// circuit breaker (kind "model").
type endpoint struct {
	name     string // the URL without its query, and the fallback's model: the breaker's name
	url      string // of chat completions
	resp     string // of the Responses API
	model    string // the model asked for there; "" keeps the one the client asked for
	key      config.Secret
	fallback bool
	breaker  *reach.Breaker
}

// endpoints returns the proxy's endpoints, the configured one first.
func (p *Proxy) endpoints() []*endpoint {
	mc := p.opts.Model
	if mc == nil || mc.BaseURL == "" {
		return nil
	}
	eps := []*endpoint{{name: endpointName(mc.BaseURL, ""), url: openai.ChatURL(mc.BaseURL), resp: openai.ResponsesURL(mc.BaseURL), key: mc.APIKey}}
	for _, f := range mc.Fallbacks {
		eps = append(eps, &endpoint{name: endpointName(f.BaseURL, f.Model), url: openai.ChatURL(f.BaseURL), resp: openai.ResponsesURL(f.BaseURL),
			model: f.Model, key: f.APIKey, fallback: true})
	}
	if b := p.opts.Breakers; b != nil {
		for _, ep := range eps {
			ep.breaker = b.Breaker("model", ep.name, mc.Breaker.Policy())
		}
	}
	return eps
}

// target returns the endpoint's URL of api.
func (ep *endpoint) target(api apiKind) string {
	if api == responsesAPI {
		return ep.resp
	}
	return ep.url
}

// endpointName names an endpoint by its URL without a query (which may
// hold a key) and, for a fallback, the model asked for there.
func endpointName(base, model string) string {
	name := base
	if u, err := neturl.Parse(base); err == nil {
		name = u.Scheme + "://" + u.Host + u.Path
	}
	if model != "" {
		name += " " + model
	}
	return name
}

// modelAttempt is the endpoint that answered, the body it was sent, and
// what ends its context (after its answer has been read).
type attempt struct {
	*endpoint
	asked  string // the model it was asked for
	body   []byte
	cancel context.CancelFunc
}

// send sends the chat completion (or the Responses API request) to the
// first of eps (the configured endpoint, then its fallbacks), and while its
// breaker is open, or it answers 5xx or 429 or not at all (a connection
// failure, a timeout), or does not serve the API (unserved), to the next
// in turn. It returns the first other answer (a success, or a 4xx to pass
// on as is), the
// endpoint that gave it, and the prompt tokens estimated for endpoints
// that timed out before it (the provider may bill them). A fallback whose
// model's context window (model.context_limits) does not hold the turn
// (its prompt, estimate, and the answer it asks for) is passed over, not
// asked, and the turn's model frame says so (its why, in the audit). When
// none answered, it writes the error to w, gives back the turn (unanswered),
// ends the frame, and returns false: when every fallback was passed over
// for its window, the error is the context window's 403, as the model's
// own window gets (the turn, shortened, would fit one).
func (p *Proxy) send(w http.ResponseWriter, r *http.Request, mctx context.Context, mf *reach.Frame, req *reach.Request,
	api apiKind, body map[string]json.RawMessage, estimate func() int64, model string, timeout time.Duration, eps []*endpoint, unanswered func()) (*http.Response, *attempt, int64, bool) {
	var (
		spent    int64
		tried    []string
		lastErr  error
		lastResp struct {
			status int
			header http.Header
			body   []byte
		}
		open   *reach.Error
		stream = bytes.Equal(bytes.TrimSpace(body["stream"]), []byte("true"))
		// narrow is the context window's refusal of the last fallback
		// passed over for it, and fallbacks how many fallbacks there
		// were, narrowed how many of them were passed over so.
		narrow              *reach.Error
		fallbacks, narrowed int
	)
	costly := costBudgeted(req)
	for _, ep := range eps {
		m := model
		if ep.model != "" {
			m = ep.model
		}
		if ep.fallback {
			fallbacks++
			// The model's own window was checked before the turn began
			// (refuseContext); a fallback's may be smaller.
			if e := p.overContext(api, body, estimate, m); e != nil {
				narrow = e
				narrowed++
				skip := fmt.Sprintf("%s (model %s's context window, %d tokens in model.context_limits, does not hold this turn of about %d)",
					ep.name, m, p.opts.Model.ContextLimits[m], addTokens(estimate(), windowAsked(api, body)))
				tried = append(tried, skip)
				why := "passed over fallback " + skip
				if old := mf.Why(); old != "" {
					why = old + "; " + why
				}
				mf.SetWhy(why)
				continue
			}
		}
		if _, priced := p.opts.Model.Prices[m]; ep.fallback && costly && !priced {
			tried = append(tried, ep.name+" (no price for "+m+", and the request has a cost budget)")
			continue
		}
		pass, e := ep.breaker.Admit(mctx)
		if e != nil {
			open = e
			tried = append(tried, ep.name+" (its circuit breaker is open)")
			continue
		}
		body["model"], _ = json.Marshal(m)
		out, _ := json.Marshal(body)
		actx, cancel := context.WithTimeout(mctx, timeout)
		// Whether any of the request was written: one that never reached
		// the model (its connection refused, its host unknown) is charged
		// nothing.
		var wrote atomic.Bool
		tctx := httptrace.WithClientTrace(actx, &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }})
		ureq, err := http.NewRequestWithContext(tctx, http.MethodPost, ep.target(api), bytes.NewReader(out))
		if err != nil {
			cancel()
			pass.Abandoned()
			lastErr = errors.New("the model URL is not usable")
			tried = append(tried, ep.name+" (its URL is not usable)")
			continue
		}
		ureq.Header.Set("Content-Type", "application/json")
		// The model endpoint's spans join the trace, under this turn's span.
		ureq.Header.Set(link.HeaderTraceparent, link.Traceparent(req, mf.ID))
		if k := ep.key.Reveal(); k != "" {
			ureq.Header.Set("Authorization", "Bearer "+k)
		} else if a := r.Header.Get("Authorization"); a != "" && !ep.fallback && !p.opts.Authenticates {
			// The client's own key goes to the configured endpoint only,
			// never to a fallback's host.
			ureq.Header.Set("Authorization", a)
		}
		if stream {
			ureq.Header.Set("Accept", "text/event-stream")
		}
		resp, err := p.opts.Client.Do(ureq)
		if err != nil {
			// Read before cancel, which would end actx too: every error
			// was read as a timeout.
			timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
			cancel()
			// The model may have read the prompt, and the provider bills
			// it: a call that ends before the answer (the client left, the
			// request was stopped, the model timed out) is charged the
			// prompt's estimate, so that leaving early cannot get around a
			// budget. One that was never sent is charged nothing.
			prompt := reach.TokenUsage{Input: spent}
			if wrote.Load() {
				prompt = (&answer{}).usage(out)
				prompt.Input = addTokens(prompt.Input, spent)
			}
			switch {
			case r.Context().Err() != nil: // the client left: nobody to answer
				pass.Abandoned()
				unanswered()
				mf.FailModelSpent(context.Cause(r.Context()), prompt)
				return nil, nil, 0, false
			case mctx.Err() != nil: // the request was stopped, or its budget ran out, meanwhile
				pass.Abandoned()
				cause := context.Cause(mctx)
				unanswered()
				mf.FailModelSpent(cause, prompt)
				refuse(w, req, cause)
				return nil, nil, 0, false
			case timedOut: // the model took longer than its timeout
				spent = prompt.Input
				err = fmt.Errorf("no answer within %s", timeout)
			default: // the connection failed: before the request was sent, or after
				spent = prompt.Input
				err = transportError(err, ep.target(api))
			}
			pass.Failed(err)
			lastErr = errors.New(openai.RedactQuery(err.Error(), ep.target(api)))
			tried = append(tried, ep.name+" ("+lastErr.Error()+")")
			continue
		}
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if unserved(resp.StatusCode, b, m, body) {
				// Up, and answering: its breaker is not to open for a
				// route it lacks (its chat completions may be fine).
				cancel()
				pass.Succeeded()
				lastResp.status, lastResp.header, lastResp.body = resp.StatusCode, resp.Header, b
				lastErr = nil
				tried = append(tried, ep.name+" (answered "+resp.Status+": it does not serve this API)")
				continue
			}
			resp.Body = io.NopCloser(bytes.NewReader(b))
		}
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			cancel()
			pass.Failed(fmt.Errorf("the model endpoint answered %s", resp.Status))
			lastResp.status, lastResp.header, lastResp.body = resp.StatusCode, resp.Header, b
			lastErr = nil
			tried = append(tried, ep.name+" (answered "+resp.Status+")")
			continue
		}
		pass.Succeeded() // a 4xx is an answer too: the endpoint is up
		return resp, &attempt{endpoint: ep, asked: m, body: out, cancel: cancel}, spent, true
	}
	// None answered.
	spend := func(err error) {
		unanswered() // no endpoint answered: the client's retry is the same turn
		if spent > 0 {
			mf.FailModelSpent(err, reach.TokenUsage{Input: spent})
		} else {
			mf.FailModel(err)
		}
	}
	also := ""
	if len(eps) > 1 {
		also = " Tried: " + strings.Join(tried, "; ") + "."
	}
	if len(eps) < len(p.eps) {
		also += " The turn names an answer (previous_response_id) or an item of one (an input item's id), which only the endpoint that gave it keeps: the fallbacks elsewhere were not asked. " +
			"Try again later, or send the conversation's items in input instead, in full and without their ids, which any endpoint can answer."
	}
	switch {
	case narrow != nil && narrowed == fallbacks:
		// The model failed, and no fallback holds the turn: shortened, it
		// would fit one (or the model, back, takes it as it is).
		e := *narrow
		e.Message = fmt.Sprintf("Model %s did not answer this turn, and no fallback's context window holds it: %s", model, narrow.Message)
		e.Suggestion = "Shorten the conversation's history (drop or summarize older messages and tool results, or ask for a shorter answer) to fit a fallback's window, then send the turn again; or send it again later, once model " + model + " answers."
		spend(&e)
		w.Header().Set("X-Should-Retry", "false")
		proxyError(w, http.StatusForbidden, "invalid_request_error", e.Code, e.Message+" "+e.Suggestion+also)
	case lastErr != nil:
		spend(lastErr)
		proxyError(w, http.StatusBadGateway, "server_error", "model_unreachable", "The model endpoint did not answer: "+lastErr.Error()+"."+also)
	case lastResp.status != 0 && len(eps) < len(p.eps):
		// The endpoint's own error, with why no other was asked.
		spend(fmt.Errorf("the model endpoint answered %d", lastResp.status))
		copyHeader(w.Header(), lastResp.header)
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		json.Unmarshal(lastResp.body, &e)
		msg := fmt.Sprintf("The model endpoint answered %d", lastResp.status)
		if e.Error.Message != "" {
			msg += ": " + string(p.redact([]byte(e.Error.Message)))
		}
		proxyError(w, lastResp.status, "server_error", "model_unavailable", msg+"."+also)
	case lastResp.status != 0:
		spend(fmt.Errorf("the model endpoint answered %d", lastResp.status))
		copyHeader(w.Header(), lastResp.header)
		w.WriteHeader(lastResp.status)
		w.Write(p.redact(lastResp.body)) // an endpoint may echo the key it was given
	case open != nil:
		unanswered()
		mf.FailModel(open)
		w.Header().Set("Retry-After", strconv.Itoa(int(max(open.RetryAfter.Round(time.Second), time.Second)/time.Second)))
		proxyError(w, http.StatusServiceUnavailable, "server_error", "model_unavailable", open.Message+also)
	default:
		err := errors.New("no model endpoint could be asked")
		unanswered()
		mf.FailModel(err)
		proxyError(w, http.StatusServiceUnavailable, "server_error", "model_unavailable", "No model endpoint could be asked."+also)
	}
	return nil, nil, 0, false
}

// unserved reports whether an endpoint's answer (status, body b) to a
// request of body for model says that it does not serve the API asked (a
// server of chat completions only, which has no /responses): 405, or a
// 404 that is not the API's own about what the request named. An unknown
// model (OpenAI's model_not_found, or a message that names the model, as
// vLLM's and Ollama's do) or an unknown previous_response_id is the
// client's to mend: passed on, not tried elsewhere. So is a 404 whose
// error names the parameter at fault (OpenAI's unknown input item, param
// "input"; its route's own 404, "Invalid URL", names none): a server
// that lacks the route knows none of the request's parameters.
func unserved(status int, b []byte, model string, body map[string]json.RawMessage) bool {
	if status == http.StatusMethodNotAllowed {
		return true
	}
	var e struct {
		Param any `json:"param"` // vLLM's, at the top
		Error struct {
			Param any `json:"param"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && (e.Param != nil && e.Param != "" || e.Error.Param != nil && e.Error.Param != "") {
		return false
	}
	var prev string
	json.Unmarshal(body["previous_response_id"], &prev)
	for _, s := range []string{"model_not_found", "previous_response_not_found", model, prev} {
		if s != "" && bytes.Contains(b, []byte(s)) {
			return false
		}
	}
	return true
}

// transportError says what a call to the model endpoint at url that got
// no answer met, and what to check: a refused connection (nothing listens
// there), a host name that does not resolve, or the transport's own error.
func transportError(err error, url string) error {
	host := url
	if u, e := neturl.Parse(url); e == nil {
		host = u.Host
	}
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("the connection to %s was refused (nothing listens there): check the model's base_url, and that its server is running", host)
	case errors.As(err, &dns):
		return fmt.Errorf("the host name of %s does not resolve: check the model's base_url", host)
	}
	return fmt.Errorf("%w: check the model's base_url, and that its server is running and reachable", err)
}
