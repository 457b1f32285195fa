// Package modelproxy is the model proxy (E3): POST /v1/chat/completions is
// forwarded to the configured model's base_url, as a model frame of the
// caller's request; so is POST /v1/responses, the Responses API, to
// base_url/responses, through the same steps (responses.go says where its
// history, cap, usage and tool calls are).
//
//   - The request is the one named by "baggage: reach.request=<id>" or the
//     Reach-Request header, or a new one; the frame nests under the frame
//     named by Reach-Parent or a traceparent's parent span (a tool's
//     implementation calling the model forwards the headers reach gave it).
//   - A request that names nothing continues the run whose tool calls its
//     history holds (link.ModelChoices.Continued); a conversation's first
//     turn whose one user message a running turn's tool call was given as
//     a string argument (a sub-agent that tool runs in the agent's process)
//     runs in a sub-request carved from that turn's request, under a
//     delegate frame under the turn (link.ModelChoices.Handed,
//     subagent.go); a new one may
//     name its budget (Reach-Budget, or baggage reach.budget).
//   - Before forwarding, the frame passes admit and budgets, the answer is
//     capped at the tokens left once the prompt and the holds of the turns
//     running beside it are counted (holds.go), and a prompt that alone
//     needs more is refused (budget.go); a spent budget is an
//     OpenAI-style error with HTTP 402 and type "budget_exceeded", a stopped
//     request 403 "request_stopped", both with x-should-retry: false, which
//     agent frameworks surface as is and do not retry. With model.context, a
//     long history's older tool results are folded (fold.go).
//   - The tokens of the answer's usage (the final chunk of a stream; reach
//     asks for it with stream_options.include_usage, and passes it on only
//     to a client that asked for it too) are charged to the request, with
//     their cost from the price table. An answer without usage (an endpoint
//     that ignores include_usage) is charged an estimate, about four bytes
//     a token of the request and of the answer's text and tool arguments,
//     so that a token or cost budget still runs out; so is a stream cut
//     before its usage. A stream cut after it is charged what it reported.
//     A usage reported below the words of the turn's text (0, say) is
//     raised to them (openai.PromptWords).
//   - The configured secret values (the model's key among them) are masked
//     in what goes back to the client, error answers included. In a stream,
//     a value the model spells across chunks (of its text or of a tool
//     call's arguments) is masked too: the end of a chunk that may begin a
//     secret is held back until the next one (see streamMask). Only the
//     values: member names such as logprobs' "token" are the model's.
//   - The tool calls the model chose are remembered by their id, tool and
//     arguments (choices.go): when the agent sends one to /v1/calls
//     (call_id) or MCP (_meta "reach/call_id", or nothing but the tool and
//     its arguments), it becomes the model frame's child. So does one a
//     ReAct agent's model writes into its text, on a turn that offers no
//     tools (textcalls.go).
//   - A Responses API turn that names an answer (previous_response_id)
//     reach did not give its principal, or a conversation, is refused:
//     the endpoint keeps them for the gateway's key, which all principals
//     share (owners.go).
//
// The answer carries the Reach-Request and Reach-Frame headers.
//
//	p := modelproxy.New(&modelproxy.Options{Model: cfg.Model, Owned: owned, Choices: choices, Models: rt})
//	mux.Handle("POST /v1/chat/completions", p)
//	mux.Handle("POST /v1/responses", p)
package modelproxy

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/budget"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/openai"
	"github.com/agentreach/reach/internal/origin"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/store"
)

// costBudgeted reports whether r or a request above it has a cost budget.
func costBudgeted(r *reach.Request) bool {
	for ; r != nil; r = r.Parent() {
		if r.Budget().Cost > 0 {
			return true
		}
	}
	return false
}

// Options configure a Proxy. Model, Owned, Choices and Models are required.
type Options struct {
	Model   *config.ModelConfig // the endpoint; a nil one or one without base_url answers 404
	Owned   *link.Owned         // the requests calls are placed in
	Choices *link.ModelChoices  // where the tool call ids a model chose are remembered
	Models  Models              // begins the model frames
	// Delegator, if not nil, runs the sub-agent a tool runs in the
	// agent's process (Choices.Handed) in a sub-request carved from the
	// request of the turn that handed it its task, as an A2A hand-off
	// runs; if nil, its turns nest under that turn in its request.
	Delegator Delegator
	// SubagentBudget, if not nil, is the budget such a sub-request is
	// given, each amount capped at what its parent has left; if nil, what
	// its parent has left.
	SubagentBudget *reach.Budget
	// Redactor masks the configured secret values in what goes back to
	// the client; if nil, nothing is masked.
	Redactor *redact.Redactor
	// Authenticates says the gateway authenticates its clients: their
	// Authorization header is then reach's, never passed to the model.
	Authenticates bool
	Client        *http.Client // if nil, one with a clone of the default transport
	Logger        *slog.Logger // if nil, logs are discarded
	// Breakers give each endpoint (the model's, its fallbacks') a circuit
	// breaker of kind "model": a *reach.Runtime. If nil, none has one.
	Breakers Breakers
	// Ledger, if not nil, is the ledger the instances on one store share
	// (a *cluster.Cluster): each turn is admitted through it before it
	// runs, and its tokens and cost debited from it after, so that several
	// instances together never pass a request's turn, token or cost
	// budget.
	Ledger Ledger
	// Owners, if not nil, keeps who each Responses API answer belongs to
	// (a store.Store), so that a turn naming another principal's answer is
	// refused after a restart and on every instance sharing the store
	// (owners.go). If nil, only 10,000 answers are known, in memory (the
	// newest, kept per principal: past them the principal holding the
	// most gives way).
	Owners Owners
	// Kept is how long the owner of an answer is kept: past it, a turn
	// that names the answer is refused. If zero, 30 days, as long as
	// OpenAI keeps a stored response.
	Kept time.Duration
	// Tasks, if not nil, keeps the tasks model turns hand for every
	// instance on the store (a store.Store, on several instances): a
	// sub-agent whose first turn reaches another instance than the turn
	// that handed it its task is still carved from that turn's request
	// (handed.go). If nil, it is linked on the instance that ran the turn
	// only.
	Tasks HandedTasks
	// Limits, if not nil, are the token buckets of model turns (R8): a
	// turn past them is refused before it is begun (ratelimit.go).
	Limits Limiter
	// Ends, if not nil, ends a request on every instance (with Tasks: a
	// sub-agent's sub-request on the instance its first turn reached, as
	// its manager's conversation goes on on another: endSubsElsewhere).
	Ends Ender
}

// Ledger is the budget ledger several instances share.
type Ledger interface {
	// AdmitTurn debits one turn of req from the shared ledger (and its
	// ancestors'), refusing it (a *reach.Error of type budget) when that
	// passes a turn budget, or a token or cost budget is spent. It returns
	// the fewest tokens req and the requests above it have left, and
	// whether any of them has a token budget.
	AdmitTurn(ctx context.Context, req *reach.Request) (left int64, limited bool, err error)
	// Spend debits a turn's tokens and cost (nano-units), as charged.
	Spend(ctx context.Context, req *reach.Request, tokens, costNano int64) error
}

// TurnGiver is a Ledger that gives back a turn AdmitTurn debited, for a
// turn the model did not answer (refused before it was sent, or answered
// with an error): the turns budget counts the turns a model answered.
type TurnGiver interface {
	GiveBackTurn(ctx context.Context, req *reach.Request) error
}

// Holder is a Ledger that also holds what running model turns may still
// spend (several instances): a turn's prompt and its answer's cap, so that
// turns on several instances at once never pass a budget together.
type Holder interface {
	// AdmitTurnLeft is AdmitTurn, which says what cost is left too.
	AdmitTurnLeft(ctx context.Context, req *reach.Request) (SharedLeft, error)
	// HoldTurn holds, for the model turn named turn of req, hold (tokens
	// and cost) on the shared ledger of req and of each request above it,
	// and debits spend (what the turn spends at once: its prompt) from
	// each, if what each spent, what the live turns of every instance
	// hold on it and hold stay within its budget, or, when no turn holds
	// anything on it, what it spent and need do. Otherwise nothing is held
	// or debited (ok false), and left says what they have left and free.
	HoldTurn(ctx context.Context, req *reach.Request, turn string, hold, need, spend Spend) (ok bool, left SharedLeft, err error)
	// Unhold lets go of what the turn holds, once it is charged.
	Unhold(ctx context.Context, turn string) error
}

// HoldWatcher is a Holder that says when a turn of any instance lets go of
// its hold (the store's notification), so that a turn waiting for room on
// the shared ledger asks again then rather than at its next poll.
type HoldWatcher interface {
	// WatchHolds returns wake, closed once a hold on the ledger of req or
	// of a request above it is let go on any instance (or a word of it
	// may have been lost), and stop, which ends the watch.
	WatchHolds(req *reach.Request) (wake <-chan struct{}, stop func())
}

// Spend is an amount of tokens and cost (nano-units).
type Spend struct{ Tokens, CostNano int64 }

// SharedLeft is what the shared ledger says of a turn's request and the
// requests above it: the fewest tokens and cost (nano-units) they have
// left (limited false: none of them has a budget in that dimension), and,
// when Known, the fewest they have free with every instance's holds
// counted.
type SharedLeft struct {
	Tokens, Cost               int64
	TokensLimited, CostLimited bool
	FreeTokens, FreeCost       int64
	Known                      bool
}

// Breakers make circuit breakers: a *reach.Runtime.
type Breakers interface {
	Breaker(kind, name string, p *reach.BreakerPolicy) *reach.Breaker
}

// Models begins a model frame under the frame of ctx: a *reach.Runtime.
type Models interface {
	BeginModel(ctx context.Context, model string) (context.Context, *reach.Frame, error)
}

// Delegator starts the sub-request of a sub-agent: a *reach.Runtime.
type Delegator interface {
	Delegate(ctx context.Context, d *reach.Delegation) (context.Context, *reach.Request, error)
}

// Proxy serves POST /v1/chat/completions and POST /v1/responses. Make one
// with New; it is safe for concurrent use.
type Proxy struct {
	opts Options
	log  *slog.Logger
	// noUsageWarned is set once the proxy has warned of an endpoint that
	// reports no usage.
	noUsageWarned atomic.Bool
	// lowUsageWarned is set once it has warned of one that reported less
	// than the floor (openai.PromptWords).
	lowUsageWarned atomic.Bool
	// eps are where chat completions go: the model's endpoint, then its
	// fallbacks.
	eps []*endpoint
	// owners are the owners of the newest Responses API answers.
	owners ownerMemory
	// holds are what the running turns of each request may still spend.
	holds holds
	// retry makes again the charges and releases of holds the shared
	// ledger's store refused.
	retry retrier
	// handing are the turns whose handed tasks the store keeps.
	handing handing
}

// New returns a proxy.
func New(opts *Options) *Proxy {
	p := &Proxy{opts: *opts, log: opts.Logger}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.opts.Kept <= 0 {
		p.opts.Kept = DefaultKept
	}
	if p.opts.Client == nil {
		p.opts.Client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	// A turn's key goes to its endpoint's origin only, through redirects
	// too; the caller's client is not changed.
	c := *p.opts.Client
	c.CheckRedirect = origin.KeepKey(c.CheckRedirect)
	p.opts.Client = &c
	p.eps = p.endpoints()
	return p
}

// proxyError is an OpenAI-style error body.
func proxyError(w http.ResponseWriter, status int, typ, code, msg string) {
	httpjson.Write(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}})
}

// ServeHTTP answers POST /v1/chat/completions, and POST /v1/responses
// (a path that ends in /responses) the same way; and GET /v1/models[/{id}]
// with the endpoint's list of models.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api := chatAPI
	if strings.HasSuffix(r.URL.Path, "/responses") {
		api = responsesAPI
	}
	mc := p.opts.Model
	if mc == nil || mc.BaseURL == "" {
		proxyError(w, http.StatusNotFound, "invalid_request_error", "no_model",
			"No model is configured: set model.base_url in the configuration to use the model proxy.")
		return
	}
	if r.Method == http.MethodGet { // GET /v1/models[/{id}]
		p.serveModels(w, r)
		return
	}
	data, ok := httpjson.ReadBody(w, r)
	if !ok {
		return
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(data, &body); err != nil || body == nil {
		msg := "The body is not a JSON object"
		if err != nil {
			msg += ": " + err.Error()
		}
		proxyError(w, http.StatusBadRequest, "invalid_request_error", "bad_body", msg+".")
		return
	}
	// A member reach reads, spelled in another case ("Stream"), is one
	// reach does not see and a server in Go (Ollama's, decoding the body
	// into a struct with encoding/json) reads as that member: refused,
	// as the OpenAI API refuses a member it does not know.
	for k := range body {
		for _, m := range readMembers {
			if k != m && strings.EqualFold(k, m) {
				refuseHistory(w, k, "unknown_parameter", fmt.Sprintf("Unrecognized request argument supplied: %q. Spell it %q.", k, m))
				return
			}
		}
	}
	// The switches reach acts on are read as the endpoint will read them:
	// a value that is not a boolean is refused. Read as false here, it was
	// true to the servers behind the route (pydantic's lax mode takes
	// "true" and 1; a proxy that tests its truth, even "false"): the answer
	// streamed past the stream's mask, or ran in the background past reach.
	for _, k := range []string{"stream", "background"} {
		if v, ok := body[k]; ok && !jsonBoolean(v) && (k == "stream" || api == responsesAPI) {
			refuseHistory(w, k, "invalid_type", fmt.Sprintf("Invalid type for %q: expected a boolean (true or false), but got %s. Send %q: true or false.", k, jsonKind(v), k))
			return
		}
	}
	var model string
	var stream, background bool
	json.Unmarshal(body["model"], &model)
	json.Unmarshal(body["stream"], &stream)
	json.Unmarshal(body["background"], &background)
	if background && api == responsesAPI {
		// The endpoint would answer at once, queued, and the client fetch
		// the answer later (GET /v1/responses/{id}), past the turn: its
		// tokens never charged, its text never masked, and reach does not
		// serve that route.
		proxyError(w, http.StatusBadRequest, "invalid_request_error", "background_unsupported",
			"reach does not run a Responses API turn in the background: its answer would be fetched later, past the turn, its tokens not charged to the request nor its text masked. "+
				"Send it without background (with stream, for a long answer).")
		return
	}
	if label, ok := hostedMCP(body["tools"]); ok {
		// The endpoint would call the tool's server itself (OpenAI
		// Agents' hostedMcpTool asks it to with no approval), so its
		// calls would pass no guard of reach's: no loop guard, budget,
		// policy or approval, and no frame in the request's graph.
		refuseHistory(w, "tools", "hosted_mcp_unsupported",
			fmt.Sprintf("This turn offers the model a hosted MCP tool (server_label %q): the model's endpoint would call that server itself, past reach, its calls not checked by the request's loop guard, budget, policies or approvals, nor in its graph or audit log. "+
				"Make the server an upstream of reach and give the agent reach's /mcp as an MCP server (OpenAI Agents: MCPServerStreamableHttp), or send the turn without the hosted MCP tool.", label))
		return
	}
	if model == "" {
		model = cmp.Or(mc.Name, openai.DefaultModel)
		body["model"], _ = json.Marshal(model)
	}
	clientUsage := true
	if stream && api == chatAPI { // a Responses stream always ends with its usage
		// Ask for the usage chunk, keeping any other stream option; a
		// client that did not ask for it does not get it.
		var so map[string]any
		json.Unmarshal(body["stream_options"], &so)
		if so == nil { // absent, null, or not an object
			so = map[string]any{}
		}
		clientUsage = so["include_usage"] == true
		so["include_usage"] = true
		body["stream_options"], _ = json.Marshal(so)
	}

	who, _ := auth.IdentityFrom(r.Context())
	eps := p.eps
	if api == responsesAPI {
		var o *store.ResponseOwner
		if !p.ownKey(r) {
			var ok bool
			if o, ok = p.checkHistory(w, r, body, who); !ok {
				return
			}
		}
		eps = p.keeping(body, o)
	}

	l, err := link.FromHeaders(r.Header)
	if le := (*link.Error)(nil); errors.As(err, &le) {
		p.refuseLink(w, le)
		return
	}
	l.Agent = "model-proxy"
	if l.Request == "" && l.Parent == 0 {
		// A conversation that goes on: the turn whose tool calls its
		// history holds is this one's predecessor, and this turn joins it
		// (beside it, under the same parent).
		if f := p.continued(api, body, who); f != nil {
			l.Request = f.Request.ID()
			if f.Parent != nil {
				l.Parent = f.Parent.ID
			}
			// The turns it went on from have had their tools' answers: the
			// sub-agents those tools ran in the agent's process are done.
			p.opts.Owned.EndSubs(f)
			p.endSubsElsewhere(r.Context(), f) // and those begun on other instances
		} else if task := firstTask(api, body); task != "" {
			// A conversation that begins with what a running turn's tool
			// call was given: a sub-agent that tool runs in the agent's
			// process. Its turns run in a sub-request carved from that
			// turn's request, under a delegate frame under that turn.
			var sh shared
			if p.opts.Tasks == nil {
				sh.h = p.opts.Choices.Handed(task, who)
			} else {
				// On several instances the store decides, for them all
				// (handed.go).
				var err error
				if sh, err = p.handedShared(r.Context(), task, who); err != nil {
					p.linkFailed(w, err)
					return
				}
				defer sh.release()
			}
			if sh.sub != nil {
				// The sub-request a sub-agent given this task runs in:
				// this first turn, sent again, joins it.
				l.Request = sh.sub.ID()
				if d := sh.sub.DelegateFrame(); d != nil {
					l.Parent = d.ID
				}
			} else if h := sh.h; h != nil {
				id, parent, done, err := p.handOff(r.Context(), h, task, sh.held)
				if err != nil {
					var le *link.Error
					if errors.As(err, &le) {
						p.refuseLink(w, le)
						return
					}
					var re *reach.Error
					if errors.As(err, &re) {
						refuse(w, h.Turn.Request, err)
						return
					}
					p.internalError(w, err)
					return
				}
				defer done()
				p.begunFrom(r.Context(), sh.row, id)
				l.Request, l.Parent = id, parent
			}
		}
	}
	ctx, req, done, err := p.opts.Owned.CallContext(r.Context(), l, nil)
	if err != nil {
		p.linkFailed(w, err)
		return
	}
	defer done()
	if _, priced := mc.Prices[model]; !priced && costBudgeted(req) {
		names := make([]string, 0, len(mc.Prices))
		for n := range mc.Prices {
			names = append(names, n)
		}
		slices.Sort(names)
		w.Header().Set(link.HeaderRequest, req.ID())
		proxyError(w, http.StatusBadRequest, "invalid_request_error", "unpriced_model",
			fmt.Sprintf("Request %s has a cost budget, and model %q has no price (model.prices), so its cost could not be counted. Use a priced model (%s), or ask the operator to price this one.",
				req.ID(), model, strings.Join(names, ", ")))
		return
	}
	route := "/v1/chat/completions"
	if api == responsesAPI {
		route = "/v1/responses"
	}
	if p.refuseRate(ctx, w, req, model, route) {
		return
	}
	// Folded before the context window's check: a long conversation
	// folded may fit.
	folded := fold(body, mc.Context, req)
	estimate := p.promptEstimate(api, body, who, model)
	if p.refuseContext(ctx, w, req, api, body, estimate.window, model, route) {
		return
	}
	mctx, mf, err := p.opts.Models.BeginModel(reach.WithRoute(ctx, route), model)
	if err != nil {
		refuse(w, req, err)
		return
	}
	// sharedTurn is set while the shared ledger counts this turn
	// (AdmitTurn). unanswered gives the turn back, in memory and on the
	// shared ledger, when the model does not answer it: reach refused it
	// before it was sent, the endpoint answered an error (a client's retry
	// is the same turn), or no endpoint answered. Called before the frame
	// ends, so that what its end records counts no such turn.
	var sharedTurn bool
	unanswered := func() {
		mf.Unanswered()
		if sharedTurn {
			sharedTurn = false
			p.giveBackTurn(ctx, req)
		}
	}
	if len(folded) > 0 {
		mf.SetWhy(foldWhy(folded))
	}
	timeout := time.Duration(mc.Timeout)
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	if stream {
		timeout = max(timeout, 10*time.Minute)
	}
	price, priced := mc.Prices[model]
	limited := tokenBudgeted(req) || priced && costBudgeted(req)
	// held is what the turn debited of the shared ledger: its prompt,
	// reserved just before it is sent, and then its charge, settled before
	// the end of its answer is passed on (answer.end).
	var held struct{ tokens, cost int64 }
	var sl SharedLeft
	// unhold lets go of the turn's hold on the shared ledger (Holder),
	// once it is charged: when its answer is settled, or as the turn ends.
	unhold := func() {}
	if l := p.opts.Ledger; l != nil {
		var err error
		if hl, ok := l.(Holder); ok {
			sl, err = hl.AdmitTurnLeft(ctx, req)
		} else {
			sl.Tokens, sl.TokensLimited, err = l.AdmitTurn(ctx, req)
		}
		if err != nil {
			if cause := stopCause(ctx); cause != nil {
				// Stopped meanwhile (on any instance): the store's answer
				// was cut off by the stop, which is what the agent is told,
				// not that the store did not answer.
				err = cause
			}
			// A budget spent on every instance together is a refusal the
			// agent can act on: it counts among its refusals in a row.
			unanswered()
			refuse(w, req, mf.RefuseModel(ctx, err))
			return
		}
		sharedTurn = true
		limited = limited || sl.TokensLimited || priced && sl.CostLimited
		defer func() { // what the turn was charged, on every instance's ledger, less what it debited
			t, c := mf.Tokens()-held.tokens, budget.Nanos(mf.Usage().Cost)-held.cost
			chargeShared(&p.retry, p.log, l, req, t, c, unholdWait, unhold)
		}()
	}
	// The prompt's tokens, as counted before the turn is sent: only for a
	// turn a budget bounds, or whose prompt the shared ledger holds (it
	// encodes the body, and may read a stored conversation's history).
	var prompt int64
	if limited || p.opts.Ledger != nil && costBudgeted(req) {
		prompt = estimate.budget()
	}
	// The prompt is spent once it is sent: it is debited from the shared
	// ledger before, so that an instance killed before the turn's charge
	// (after its answer) leaves it spent, and a request that goes on
	// elsewhere (or on this instance's next life, within instance_ttl)
	// does not spend it again; the charge after the answer settles it.
	// Without a token or cost budget there is nothing to spend again.
	pt, pc := budget.Charge(prompt, 0, 0, price, priced)
	if limited {
		// The turn holds its prompt and its answer's cap until it is
		// charged (holds.go): turns at the same time never together
		// spend past the budget. On several instances it holds them on
		// the shared ledger too, which debits its prompt as it takes
		// the hold.
		minimum := choices(body["n"])
		if api == responsesAPI {
			minimum = minOutputTokens
		}
		var hs sharedHold
		var watch func() (<-chan struct{}, func())
		if hw, ok := p.opts.Ledger.(HoldWatcher); ok {
			watch = func() (<-chan struct{}, func()) { return hw.WatchHolds(req) }
		}
		if hl, ok := p.opts.Ledger.(Holder); ok {
			turn := mf.ID.String()
			var once sync.Once
			hs = func(tokens, cost, needTokens, needCost int64) (bool, SharedLeft, error) {
				// Let go as the turn ends even when the answer was an
				// error: the hold may have been taken all the same (its
				// client went away as it committed).
				unhold = func() {
					once.Do(func() { letGoShared(&p.retry, p.log, hl, req.ID(), turn, unholdWait) })
				}
				ok, left, err := hl.HoldTurn(ctx, req, turn, Spend{tokens, cost}, Spend{needTokens, needCost}, Spend{pt, pc})
				if ok {
					held.tokens, held.cost = pt, pc
				}
				return ok, left, err
			}
		}
		asked := askedTokens(api, body)
		if l, listed := p.listedOutputLimit(model); asked == 0 && listed && l <= (1<<62)/choices(body["n"]) {
			// The model writes no more than its listed limit: the turn
			// holds that, not all that is left, and turns at once of
			// one request may run together.
			asked = l * choices(body["n"])
		}
		answerMax, told, release, err := p.holds.take(ctx, req,
			ask{prompt: prompt, files: estimate.files, asked: asked, minimum: minimum, price: price, priced: priced, wait: timeout, watch: watch}, sl, hs)
		if err != nil {
			// A budget refusal (the prompt alone past what is left)
			// counts among the request's refusals in a row, as the
			// runtime's own do: it spends no turn, so nothing else
			// would end an agent that sends it again and again.
			unanswered()
			refuse(w, req, mf.RefuseModel(ctx, err))
			return
		}
		// Registered after the frame's end is: let go once the turn is
		// charged, as the function returns.
		defer release()
		if n := choices(body["n"]); api == chatAPI && n > answerMax {
			// Each choice spends a token at least: capped at one, n of
			// them would spend past what the budget leaves the answer.
			unanswered()
			refuse(w, req, mf.RefuseModel(ctx, tooManyChoices(req, n, answerMax)))
			return
		}
		if capTokens(api, body, answerMax, p.outputLimit(model)) && told {
			withNote(api, body, finishNote(answerMax))
		}
	}
	if l := p.opts.Ledger; l != nil && (limited || costBudgeted(req)) && held.tokens == 0 && held.cost == 0 {
		if err := l.Spend(context.WithoutCancel(ctx), req, pt, pc); err != nil {
			p.log.Error("reserving a model turn's prompt on the shared ledger failed", "request", req.ID(), "err", err)
		} else {
			held.tokens, held.cost = pt, pc
		}
	}
	w.Header().Set(link.HeaderRequest, req.ID())
	w.Header().Set(link.HeaderFrame, mf.ID.String())

	resp, ep, spent, ok := p.send(w, r, mctx, mf, req, api, body, estimate.window, model, timeout, eps, unanswered)
	if !ok {
		return
	}
	defer ep.cancel()
	defer resp.Body.Close()
	if ep.fallback {
		w.Header().Set(HeaderFallback, ep.name)
	}
	// Every 2xx is read as the answer it is to a client (the OpenAI SDKs
	// read any 2xx, and openai-go any status below 400, as a success), and
	// charged: an endpoint answering 201 or 203 was passed on as it was,
	// charged nothing. A 1xx or 3xx (a redirect the transport did not
	// follow) is no answer reach reads: it is refused, its body not passed on.
	if resp.StatusCode < 200 || resp.StatusCode >= 300 && resp.StatusCode < 400 {
		unanswered()
		mf.FailModel(fmt.Errorf("the model endpoint answered %s", resp.Status))
		w.Header().Set("X-Should-Retry", "false") // the endpoint's configuration, which a retry does not mend
		proxyError(w, http.StatusBadGateway, "server_error", "model_bad_status",
			fmt.Sprintf("The model endpoint answered %s, which is neither an answer nor an error; reach passes on no redirect. Check the model's base_url.", resp.Status))
		return
	}
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		unanswered() // the endpoint's error: no turn, and the client may send it again
		mf.FailModel(fmt.Errorf("the model endpoint answered %s", resp.Status))
		copyHeader(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		w.Write(p.redact(b)) // an endpoint may echo the key it was given
		return
	}
	// A tool call links to this turn as soon as its id has passed: an agent
	// may run it while the answer still streams. Its arguments are
	// remembered as the agent read them, with the secrets masked: those
	// are the arguments its MCP call sends.
	//
	// On several instances the tasks the tool calls hand are recorded in
	// the store before the client reads the call (recordHanded): a
	// streamed answer's as each call passes; a whole answer's in one
	// write for the turn, made beside its charge and waited for before
	// the answer passes on (whole).
	var whole bool
	var pending []*store.HandedTask
	// handedTo is the function each task (its digest) of this turn's calls
	// was handed to, "" once two calls handed it to different ones: which
	// call a sub-agent's first turn belongs to cannot then be told from
	// its task, and the record names neither (as Handed, in memory).
	var handedTo map[string]string
	// handedBefore counts the calls of this turn that handed each task
	// (its digest) so far: each call's record is its own (its Nth), so
	// that two sub-agents handed one task by this turn begin a
	// sub-request each, on any instance.
	var handedBefore map[string]int
	a := answer{chose: func(id string) { p.opts.Choices.Record(id, mf) },
		tools: toolCalls{record: func(id, name string, args []byte) {
			args = p.redact(args)
			p.opts.Choices.RecordCall(mf, id, name, args)
			if p.opts.Tasks != nil && name != "" {
				rows := p.handedRows(mf, name, args)
				if handedTo == nil && len(rows) > 0 {
					handedTo, handedBefore = map[string]string{}, map[string]int{}
				}
				for _, row := range rows {
					row.Nth = handedBefore[row.Digest]
					handedBefore[row.Digest]++
					if to, ok := handedTo[row.Digest]; ok && to != row.Tool {
						row.Tool = ""
					}
					handedTo[row.Digest] = row.Tool
				}
				if whole {
					pending = append(pending, rows...)
				} else {
					p.putHanded(r.Context(), mf, rows)
				}
			}
		}},
		handed: func() func() {
			if len(pending) == 0 {
				return func() {}
			}
			ts := pending
			pending = nil
			done := make(chan struct{})
			go func() {
				defer close(done)
				p.putHanded(r.Context(), mf, ts)
			}()
			return func() { <-done }
		},
		responded: func(id string) {
			p.opts.Choices.RecordResponse(id, mf)
			p.recordOwner(r.Context(), id, who, ep.endpoint)
		},
		gave: func(id string) { p.recordOwner(r.Context(), id, who, ep.endpoint) }}
	if api == chatAPI && !offersTools(body) {
		// A tool call the model wrote into its text links as one of the
		// API's, by its tool and arguments, and the next turn, whose
		// history holds the text, by the block's key (textcalls.go).
		a.wrote = func(text string) {
			if name, args, key, ok := textAction(string(p.redact([]byte(text)))); ok {
				p.opts.Choices.Record(key, mf)
				p.opts.Choices.RecordCall(mf, "", name, args)
			}
		}
	}
	// use is the turn's usage as the answer read so far says.
	use := func() reach.TokenUsage {
		u := a.usage(ep.body)
		u.Input = addTokens(u.Input, spent) // the prompts of endpoints that timed out before this one answered
		if ep.fallback {
			u.Model = ep.asked // charged at the price of the model that answered
		}
		return u
	}
	if l := p.opts.Ledger; l != nil {
		// The turn's charge is durable before its client has the end of
		// its answer: an instance killed after the answer passed on leaves
		// its tokens spent, as the request's next life (or another
		// instance) reads them. What the frame is charged at its end
		// settles any difference (the defer above), with no statement when
		// there is none.
		a.settle = func() {
			u := use()
			price, priced := mc.Prices[u.Model]
			if !priced {
				price, priced = mc.Prices[model]
			}
			t, c := budget.Charge(u.Input, u.Output, u.Cost, price, priced)
			if t, c = t-held.tokens, c-held.cost; t == 0 && c == 0 {
				return
			}
			if err := l.Spend(context.WithoutCancel(ctx), req, t, c); err != nil {
				p.log.Error("debiting a model turn from the shared ledger failed", "request", req.ID(), "err", err)
				return
			}
			held.tokens, held.cost = held.tokens+t, held.cost+c
			unhold() // charged: the answer spends nothing more
		}
	}
	a.stopped = func() error {
		if r.Context().Err() != nil { // the client left: nobody to tell
			return nil
		}
		return stopCause(mctx)
	}
	streamed := stream && streamedAnswer(resp)
	whole = !streamed
	switch {
	case streamed && api == responsesAPI:
		err = p.passEvents(w, resp, &a)
	case streamed:
		err = p.passStream(w, resp, !clientUsage, &a)
	default:
		err = p.passWhole(w, resp, api, &a)
	}
	u := use()
	if a.floored {
		log := p.log.Debug
		if p.lowUsageWarned.CompareAndSwap(false, true) {
			log = p.log.Warn
		}
		log("the model endpoint reported fewer tokens than the turn's text has words; the words were charged", "request", req.ID(), "model", model,
			"tokens", u.Input+u.Output)
	}
	if !a.reported {
		log := p.log.Debug
		if p.noUsageWarned.CompareAndSwap(false, true) { // once: an endpoint that never reports would fill the log
			log = p.log.Warn
		}
		log("the model endpoint reported no usage; an estimate was charged (about 4 bytes a token)", "request", req.ID(), "model", model,
			"tokens", u.Input+u.Output)
	}
	crashpoint.Reached("model.answered") // the answer passed on, charged on the shared ledger (answer.end), its frame not ended yet
	if err != nil {
		mf.FailModelSpent(err, u)
		return
	}
	mf.EndModel(u)
}

// giveBackTurn gives back on the shared ledger the turn of req it
// admitted, which the model did not answer (TurnGiver). A failure is
// logged: the turn then stays counted, as before.
func (p *Proxy) giveBackTurn(ctx context.Context, req *reach.Request) {
	g, ok := p.opts.Ledger.(TurnGiver)
	if !ok {
		return
	}
	if err := g.GiveBackTurn(context.WithoutCancel(ctx), req); err != nil {
		p.log.Error("giving back an unanswered model turn on the shared ledger failed: it stays counted", "request", req.ID(), "err", err)
	}
}

// refuseLink answers a turn whose request, parent or budget (its headers,
// or the request they name) reach refuses before the model is asked, as
// the SDKs read it: one the model reads (link.Error.Model: a budget it may
// not name, a request not its to work in) is never to be retried, a 400
// or 403 with x-should-retry: false; one that may pass in a moment (the
// shared store did not answer: 503) or once calls end (429) is theirs to
// retry; any other is the client's to mend, and nothing ran, so it says
// x-should-retry: false, which the openai SDKs obey, and is never a 409,
// which the AI SDK retries whatever the headers say (a parent frame of
// another request, a request id that starts no new work): a 400, as the
// endpoint's own answer to a request it cannot serve.
//
// Its text is masked as every error is (maskText): a link error may quote
// a store's error or what the client sent.
func (p *Proxy) refuseLink(w http.ResponseWriter, le *link.Error) {
	status, typ := le.Status, "invalid_request_error"
	switch {
	case le.Model:
		if status != http.StatusForbidden {
			status = http.StatusBadRequest // 409, 408, 429, 5xx: every SDK retries them
		}
		w.Header().Set("X-Should-Retry", "false")
	case status == http.StatusServiceUnavailable:
		typ = "server_error"
		w.Header().Set("X-Should-Retry", "true")
		w.Header().Set("Retry-After", "1")
	case status == http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1")
	case status >= 500:
		typ = "server_error"
	default:
		if status == http.StatusConflict || status == http.StatusRequestTimeout {
			status = http.StatusBadRequest
		}
		w.Header().Set("X-Should-Retry", "false")
	}
	proxyError(w, status, typ, le.Code, p.maskText(strings.TrimSpace(le.Message+" "+le.Suggestion)))
}

// internalError answers a turn that could not be placed in a request for
// a reason that is no refusal. The error may quote what a store was given
// (a DSN, a key): masked as every error is, in the answer and in the log.
// linkFailed answers a turn that could not be placed: a link.Error as
// its refusal, anything else as an internal error.
func (p *Proxy) linkFailed(w http.ResponseWriter, err error) {
	var le *link.Error
	if errors.As(err, &le) {
		p.refuseLink(w, le)
		return
	}
	p.internalError(w, err)
}

func (p *Proxy) internalError(w http.ResponseWriter, err error) {
	// The error may be a store's or a driver's own text: logged, not told.
	p.log.Error("model turn not placed in a request", "error", p.maskText(err.Error()))
	proxyError(w, http.StatusInternalServerError, "server_error", "internal",
		"The model turn could not be placed in a request. Nothing was sent to the model; try again, and if it goes on, ask the operator (reach's log has the error).")
}

// maskText masks an error's text with the full rules (registered values,
// secret names, credentials after a scheme), and shows the URLs it quotes
// as a log line does (their user as xxxxx, their query as ?…): the text is
// reach's own, or a store's, not a model's answer (see redact).
func (p *Proxy) maskText(s string) string {
	if p.opts.Redactor != nil {
		s = p.opts.Redactor.RedactString(s)
	}
	return redact.URLsShown(s)
}

// redact masks the configured secret values in b, a model's answer: only
// them, as a model's answer has names that are not the caller's ("token"
// in logprobs) and text that is a program's (key=value).
func (p *Proxy) redact(b []byte) []byte {
	if p.opts.Redactor == nil {
		return b
	}
	return p.opts.Redactor.Values(b)
}

// copyHeader passes on what a client needs of the model's headers: the
// answer's type, its ids, and the endpoint's advice on retrying (the OpenAI
// SDKs obey x-should-retry before the status, and wait retry-after-ms or
// Retry-After).
func copyHeader(dst, src http.Header) {
	for _, k := range []string{"Content-Type", "X-Request-Id", "Openai-Processing-Ms", "Retry-After", "Retry-After-Ms", "X-Should-Retry"} {
		if v := src.Get(k); v != "" {
			dst.Set(k, v)
		}
	}
}

// answer is what the proxy learns from a model's answer on the way back.
type answer struct {
	use      reach.TokenUsage
	reported bool // the answer carried its usage
	// text is the answer's text, at most MaxAnswer of it (a stream's may
	// go on); said counts all of it, for the estimate.
	text  strings.Builder
	said  int
	args  int             // bytes of tool call arguments
	raw   int             // bytes of the answer, when it could not be read as one
	chose func(id string) // told each tool call id as it is read, if set
	tools toolCalls       // the tool calls, told once complete
	// spoke counts the words of the text, and argued of the tool calls'
	// arguments: with promptWords, those of the request's text (once
	// counted), the floor of a reported usage (openai.PromptWords); floored says the
	// usage reported was below it, and raised to it.
	spoke, argued openai.Words
	reasoned      openai.Words // of a chat answer's reasoning (noteReasoning)
	// written is the words of the output items of a whole Responses API
	// answer (or of a stream's final event), and doneWords of the items a
	// stream gave whole (done, by their id): the endpoint may give its
	// text there and in no delta, so the floor is the most of the three.
	written, doneWords int64
	// unread is the words of the chunks and events reach could not read
	// (openai.AnswerWords), which the client's SDK may: a floor too.
	unread      int64
	done        map[string]int64
	promptWords int64
	counted     bool
	floored     bool
	// responded is told a Responses API answer's id; called holds the ids
	// of the function calls it chose, each recorded once.
	responded func(id string)
	respID    string // the id responded was told last
	called    map[string]bool
	// gave is told the id of each item of a Responses API answer's
	// output, and of a code interpreter's container, once (items holds
	// them): a later turn may name it in input, or in its tools.
	gave  func(id string)
	items map[string]bool
	// settle, if set, is called once, just before the end of the answer
	// is passed on (end): the turn's charge on the shared ledger.
	settle func()
	// handed, if set, is called once by passWhole before end: it begins
	// the write of the tasks the answer's tool calls hand (one for the
	// turn, beside the settle) and returns what waits for it, called
	// before the first byte of the answer is passed on.
	handed func() (wait func())
	// wrote, if set, is told the text of a chat answer that chose no tool
	// call of the API (calledAPI), once, before the end of the answer is
	// passed on: the tool call a ReAct agent's model writes (textcalls.go).
	wrote     func(text string)
	calledAPI bool
	// stopped, if set, returns why the turn was stopped while its answer
	// streamed (its request stopped, a budget of it spent), or nil: a
	// stream cut so is told as that refusal, not as a broken stream to
	// send again (brokenStream).
	stopped func() error
	// finished holds, while wrote is set, the choices of a stream read so
	// far and whether each has ended (its finish_reason): the text is
	// whole when all have, before the chunk that ends the last is passed
	// on, and the client may run the call it writes then, before the
	// stream's [DONE] reaches the proxy. open counts those not ended.
	finished map[int]bool
	open     int
}

// end is called just before the end of the answer is passed on: the whole
// of a JSON answer, a chat stream's [DONE], a Responses API stream's final
// event.
func (a *answer) end() {
	if f := a.settle; f != nil {
		a.settle = nil
		f()
	}
}

func (a *answer) id(id string) {
	if a.chose != nil {
		a.chose(id)
	}
}

func (a *answer) note(c *openai.Completion) {
	if c.Model != "" {
		a.use.Model = c.Model // the model that answered
	}
	if u := c.Usage; u != nil && u.PromptTokens >= 0 && u.CompletionTokens >= 0 { // a count below zero is no count: estimated
		a.use.Input, a.use.Output = u.PromptTokens, u.CompletionTokens
		a.reported = true
	}
	for _, ch := range c.Choices {
		// A whole answer's message, a chunk's delta: the same members.
		for i, m := range [...]*openai.Message{ch.Message, ch.Delta} {
			if m == nil {
				continue
			}
			a.say(m.Content)
			a.say(m.Refusal)
			if au := m.Audio; au != nil {
				a.say(au.Transcript)
			}
			if fc := m.FunctionCall; fc != nil {
				a.argue(fc.Arguments)
				a.calledAPI = true
			}
			for _, tc := range m.ToolCalls {
				a.calledAPI = true
				if i == 0 || tc.ID != "" { // a delta names its call in one chunk
					a.id(tc.ID)
				}
				a.argue(tc.Function.Arguments)
				if cc := tc.Custom; cc != nil {
					a.argue(cc.Input)
				}
			}
		}
	}
}

// say adds s to the answer's text: all of it to what was said, and to the
// text kept (the model turn's, for as long as its request lives) as much as
// fits in MaxAnswer, cut at a character's start.
func (a *answer) say(s string) {
	a.said += len(s)
	a.spoke.Add(s)
	if room := MaxAnswer - a.text.Len(); len(s) > room {
		for room > 0 && !utf8.RuneStart(s[room]) {
			room--
		}
		s = s[:max(room, 0)]
	}
	a.text.WriteString(s)
}

// reasoningMessage is the reasoning a chat answer's message or chunk's
// delta may carry, as servers of reasoning models send it
// (reasoning_content, or reasoning as a string): text the model wrote,
// billed as output, that the client reads.
type reasoningMessage struct {
	ReasoningContent string          `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
}

// noteReasoning counts the words of the reasoning of a chat answer or
// chunk (b), for the floor and the estimate: an endpoint reporting 0
// tokens that answered in reasoning alone was charged nothing for it.
func (a *answer) noteReasoning(b []byte) {
	if !bytes.Contains(b, []byte(`"reasoning`)) {
		return
	}
	var c struct {
		Choices []struct {
			Message, Delta *reasoningMessage
		} `json:"choices"`
	}
	if json.Unmarshal(b, &c) != nil {
		return
	}
	for _, ch := range c.Choices {
		for _, m := range [...]*reasoningMessage{ch.Message, ch.Delta} {
			if m == nil {
				continue
			}
			var r string
			if len(m.Reasoning) > 0 && m.Reasoning[0] == '"' {
				json.Unmarshal(m.Reasoning, &r)
			}
			// A server that sends both (vLLM while it renamed
			// reasoning_content reasoning, gateways that copy one to the
			// other) sends the same text twice: the floor counts it once,
			// the longer, so that it stays at or below the endpoint's count.
			s := m.ReasoningContent
			if len(r) > len(s) {
				s = r
			}
			a.args += len(s)
			a.reasoned.Add(s)
		}
	}
}

// argue adds s to the tool calls' arguments the answer holds.
func (a *answer) argue(s string) {
	a.args += len(s)
	a.argued.Add(s)
}

// parts is how many ids and tool calls the answer holds to note them once.
func (a *answer) parts() int { return len(a.items) + len(a.called) + len(a.tools.calls) }

// BytesPerToken is the estimate's rate (openai.BytesPerToken): about four
// bytes of English text make a token.
const BytesPerToken = openai.BytesPerToken

// usage is the answer's usage as reported, or else estimated from the
// request's body (prompt, counted as the token budget counts it:
// promptTokens) and the answer's text and arguments. A
// count reported below what reach counts of the turn's text (its words:
// openai.PromptWords) is raised to that.
func (a *answer) usage(prompt []byte) reach.TokenUsage {
	u := a.use
	u.Text = a.text.String()
	if !a.reported {
		out := max(a.said+a.args, a.raw)
		// The words of items given whole but in no delta (written,
		// doneWords) are not in said: they are a floor of the estimate.
		u.Input, u.Output = promptTokens(prompt), max(openai.EstimateTokens(out), a.written, a.doneWords)
		return u
	}
	if !a.counted {
		a.promptWords, a.counted = openai.PromptWords(prompt), true
	}
	if u.Input < a.promptWords {
		u.Input, a.floored = a.promptWords, true
	}
	if n := max(a.spoke.N+a.argued.N+a.reasoned.N+a.unread, a.written, a.doneWords); u.Output < n {
		u.Output, a.floored = n, true
	}
	return u
}

// addTokens adds counts of tokens, saturating at the most an int64 holds:
// an endpoint that reported that many prompt tokens, plus the estimate of
// those an endpoint before it timed out on, wrapped below zero, which a
// charge takes for none (budget.Charge), and the request's budget was not
// touched.
func addTokens(a, b int64) int64 {
	s := a + b
	if a >= 0 && b >= 0 && s < a {
		return math.MaxInt64
	}
	return s
}

// MaxAnswer bounds a whole (not streamed) answer the proxy passes on, and
// each event of a stream.
const MaxAnswer = 16 << 20

// MaxStream bounds a streamed answer the proxy passes on, and maxParts the
// texts, tool calls and ids of an answer it follows (to mask each text, to
// note each id once): an endpoint that streams on without end is cut there,
// with the API's error (model_answer_too_large), rather than have reach
// hold what it learns of the stream for as long as it goes on. No model's
// answer comes near either (a generated image, in several partial images
// and repeated whole twice, is some MiB: several in one answer, tens).
const (
	MaxStream = 256 << 20
	maxParts  = 1 << 16
)

// streamLimit is the bound eachEvent applies: MaxStream (a test lowers it).
var streamLimit = MaxStream

// passWhole copies a JSON answer (of api) and reads its usage and tool
// call ids.
func (p *Proxy) passWhole(w http.ResponseWriter, resp *http.Response, api apiKind, a *answer) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	if err != nil {
		a.raw = len(b)
		if a.stopped != nil {
			if cause := a.stopped(); cause != nil {
				// Stopped while the answer came: the refusal, not a 502
				// that the client's SDK would retry.
				refuse(w, nil, cause)
				return cause
			}
		}
		proxyError(w, http.StatusBadGateway, "server_error", "model_read", "Reading the model's answer failed.")
		return fmt.Errorf("reading the model's answer: %w", err)
	}
	if len(b) > MaxAnswer {
		a.raw = len(b)
		// Charged, and the same turn again would be as long: the openai
		// SDKs would send it twice more, each charged again.
		w.Header().Set("X-Should-Retry", "false")
		proxyError(w, http.StatusBadGateway, "server_error", "model_answer_too_large",
			fmt.Sprintf("The model's answer is larger than %d MiB, and reach does not pass on a part of it. Ask for a shorter answer (max_tokens), or stream it.", MaxAnswer>>20))
		return fmt.Errorf("the model's answer is larger than %d MiB", MaxAnswer>>20)
	}
	if api == responsesAPI {
		var rb responseBody
		if json.Unmarshal(b, &rb) == nil {
			a.noteResponse(&rb)
		} else {
			a.raw = len(b)
		}
	} else if c := (openai.Completion{}); json.Unmarshal(b, &c) == nil {
		a.note(&c)
		a.noteReasoning(b)
		a.tools.add(b)
		a.tools.end()
		a.wroteText()
	} else {
		a.raw = len(b)
	}
	wait := func() {}
	if a.handed != nil {
		wait = a.handed()
	}
	a.end()
	wait() // the tasks the calls hand are in the store before the client reads a call
	copyHeader(w.Header(), resp.Header)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if api == responsesAPI {
		b = maskResponseLogprobs(p.opts.Redactor, b)
	} else {
		b = maskLogprobs(p.opts.Redactor, b)
	}
	w.Write(p.redact(b))
	return nil
}

// passStream copies an SSE answer event by event, flushing each, and reads
// the usage (final chunk) and tool call ids on the way.
func (p *Proxy) passStream(w http.ResponseWriter, resp *http.Response, dropUsage bool, a *answer) error {
	rc, sc := startStream(w, resp)
	mask := newStreamMask(p.opts.Redactor) // a secret split across chunks
	// rest writes what mask still holds, as a chunk of its own.
	rest := func() error {
		if mask == nil {
			return nil
		}
		if b := mask.rest(); b != nil {
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return fmt.Errorf("the client went away: %w", err)
			}
		}
		return nil
	}
	// ended: the stream said it ended ([DONE], a choice's finish_reason,
	// or the endpoint's own error chunk), unlike one cut between events.
	ended := false
	// An event's data may span several lines (the client joins them with
	// a line feed) with other fields and comments between them: its chunk
	// is read, masked and passed on whole, as one data line where its
	// first was, so that a key spelled across chunks is seen in each.
	pass := func(lines [][]byte) error { // the lines of one event
		if len(lines) == 0 {
			return nil
		}
		data, has := eventData(lines)
		d := bytes.TrimSpace(data)
		drop := false
		var out bytes.Buffer
		if has && bytes.Equal(d, []byte("[DONE]")) {
			ended = true
			a.tools.end()
			a.wroteText()
			a.end()
			if err := rest(); err != nil {
				return err
			}
		} else if has {
			var c openai.Completion
			if json.Unmarshal(d, &c) == nil {
				a.note(&c)
				a.noteReasoning(d)
				a.tools.add(d)
				if a.wrote != nil && !a.calledAPI && len(c.Error) == 0 && a.choicesEnded(c.Choices) { // a tool call of the API: no text is told
					a.wroteText() // the text is whole: recorded before the client has its end
				}
				ended = ended || len(c.Error) > 0 || slices.ContainsFunc(c.Choices, func(ch openai.Choice) bool { return ch.FinishReason != "" })
				drop = dropUsage && c.Usage != nil && len(c.Choices) == 0 // the usage chunk reach asked for
			} else {
				a.raw += len(d)
				a.unread += openai.AnswerWords(d)
			}
			r := d
			if mask != nil {
				r = mask.chunk(d)
			}
			data = p.redact(r)
		}
		for _, l := range lines {
			if bytes.HasPrefix(l, []byte("data:")) {
				if has && !drop { // the data where its first line was
					writeData(&out, data)
				}
				has = false
				continue
			}
			// An event's name, a comment, or a line a server writes
			// against the format: no SDK reads it, and a client that
			// reads the stream as text does.
			out.Write(p.redact(l))
			out.WriteByte('\n')
		}
		if a.parts()+mask.parts() >= maxParts {
			return errStreamTooLarge // this event not passed on: its texts may not be masked whole
		}
		if out.Len() == 0 {
			return nil
		}
		out.WriteByte('\n')
		if _, err := w.Write(out.Bytes()); err != nil {
			return fmt.Errorf("the client went away: %w", err)
		}
		rc.Flush()
		return nil
	}
	err := eachEvent(sc, pass)
	if err != nil && !streamBroken(err) {
		return err // the client went away
	}
	a.tools.end()
	if err := rest(); err != nil { // a stream that ended without [DONE]
		return err
	}
	err = streamOutcome(sc, err, ended)
	if err == nil {
		a.wroteText() // a stream that ended without [DONE]; not one cut short, which the client fails
	}
	if err != nil {
		// The client is told, as an endpoint tells of an error mid-stream:
		// the openai SDKs raise an APIError on a chunk with "error".
		var typ, code, msg string
		err, typ, code, msg = brokenStream(err, a)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code, "param": nil}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	rc.Flush()
	return err
}

// continued returns the model turn a request to api goes on, when it names
// no request: for the Responses API, the turn that gave the answer its
// previous_response_id names, else the turn that chose the function calls
// its input holds; for chat, the turn that chose the tool calls its
// messages hold.
func (p *Proxy) continued(api apiKind, body map[string]json.RawMessage, who *auth.Identity) *reach.Frame {
	if api == chatAPI {
		return p.opts.Choices.Continued(historyIDs(body["messages"], !offersTools(body)), who)
	}
	var prev string
	json.Unmarshal(body["previous_response_id"], &prev)
	if f := p.opts.Choices.Responded(prev, who); f != nil {
		return f
	}
	return p.opts.Choices.Continued(inputIDs(body["input"]), who)
}

// stopCause is why ctx ended when a stop of its request (or a refusal)
// ended it, else nil.
func stopCause(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	var re *reach.Error
	var se *reach.StopError
	if errors.As(cause, &re) || errors.As(cause, &se) {
		return cause
	}
	return nil
}

// firstTask returns the text of a conversation's one user message when
// that is all it holds besides system or developer messages (the first
// turn of an agent's run), and "" for any other: a turn that goes on from
// an earlier one, or names a stored conversation (previous_response_id,
// conversation).
func firstTask(api apiKind, body map[string]json.RawMessage) string {
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	raw := body["messages"]
	if api == responsesAPI {
		if len(body["previous_response_id"]) > 0 && string(body["previous_response_id"]) != "null" ||
			len(body["conversation"]) > 0 && string(body["conversation"]) != "null" {
			return ""
		}
		raw = body["input"]
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	if json.Unmarshal(raw, &items) != nil {
		return ""
	}
	task := ""
	for _, it := range items {
		if it.Type != "" && it.Type != "message" {
			return ""
		}
		switch it.Role {
		case "system", "developer":
		case "user":
			if task != "" {
				return ""
			}
			task = contentText(it.Content)
			if task == "" {
				return ""
			}
		default:
			return ""
		}
	}
	return task
}

// kept returns the tokens of the history the endpoint keeps for a
// Responses API turn that names previous_response_id, and adds to its
// input: at least what the turn that gave that answer was charged (its
// prompt and its answer), when reach knows that turn (Answered: in a
// request that ended too, as a conversation goes on in a new one); 0 for a
// chat turn, whose history is all in its messages.
func (p *Proxy) kept(api apiKind, body map[string]json.RawMessage, who *auth.Identity) int64 {
	if api != responsesAPI {
		return 0
	}
	var prev string
	json.Unmarshal(body["previous_response_id"], &prev)
	if f := p.opts.Choices.Answered(prev, who); f != nil {
		return f.Tokens()
	}
	return 0
}

// eachEvent reads sc's lines into events, each up to its blank line, and
// calls pass with each event's lines (an empty one when events are apart
// by more than one blank line); pass keeps none of them. The stream's last
// event, without its blank line, is passed only when its data is whole
// ([DONE] or a whole JSON value): one cut before its end could not be
// masked whole (a secret it spells in part is no secret the masks know),
// so the stream ends with errStreamCut instead, and a last event with no
// data is dropped. An event over MaxAnswer bytes ends the stream with
// errEventTooLarge.
func eachEvent(sc *bufio.Scanner, pass func(lines [][]byte) error) error {
	var lines [][]byte
	held := 0  // the bytes of lines
	total := 0 // the bytes of the stream
	for sc.Scan() {
		if total += len(sc.Bytes()) + 1; total > streamLimit {
			return errStreamTooLarge
		}
		if b := sc.Bytes(); len(b) > 0 {
			if held += len(b); held > MaxAnswer {
				return errEventTooLarge
			}
			lines = append(lines, bytes.Clone(b))
			continue
		}
		if err := pass(lines); err != nil {
			return err
		}
		lines, held = lines[:0], 0
	}
	if len(lines) == 0 {
		return nil
	}
	data, has := eventData(lines)
	switch d := bytes.TrimSpace(data); {
	case !has:
		return nil
	case bytes.Equal(d, []byte("[DONE]")) || json.Valid(d):
		return pass(lines)
	}
	return errStreamCut
}

// errStreamTooLarge ends a stream past MaxStream bytes, or whose texts,
// tool calls and ids pass maxParts.
var errStreamTooLarge = fmt.Errorf("the model's stream is larger than %d MiB, or has more than %d texts, tool calls and ids", MaxStream>>20, maxParts)

// errStreamCut ends a stream that ended inside an event (see eachEvent).
var errStreamCut = errors.New("the model's stream ended inside an event, which was not passed on")

// errStreamEnded ends a stream that ended between events before its end:
// a chat stream with neither [DONE] nor a finish_reason, a Responses
// stream with no final event. Its client's SDK would take the answer for
// whole.
var errStreamEnded = errors.New("the model's stream ended before its last event")

// streamBroken reports whether err, what passing a stream on returned,
// broke the model's stream (it was cut inside an event, one of its events
// was too large, or reading it failed), rather than the client's.
func streamBroken(err error) bool {
	return errors.Is(err, errStreamCut) || errors.Is(err, errStreamEnded) || errors.Is(err, errEventTooLarge) || errors.Is(err, errStreamTooLarge) || errors.Is(err, errStreamRead)
}

// streamOutcome is how passing a stream on ended, given what eachEvent
// returned (err) and whether the stream said it was done (ended): err, or
// the scanner's read error, or errStreamEnded for a stream that stopped
// between events before its end.
func streamOutcome(sc *bufio.Scanner, err error, ended bool) error {
	switch e := sc.Err(); {
	case err != nil:
		return err
	case e != nil:
		return fmt.Errorf("%w: %w", errStreamRead, e)
	case !ended:
		return errStreamEnded
	}
	return nil
}

// errStreamRead wraps an error reading the model's stream.
var errStreamRead = errors.New("reading the model's stream")

// brokenStream is what the client of a stream that broke with err is
// told, and the error its turn ends with: the refusal, when the turn was
// stopped (its request stopped, its budget spent: reading the model's
// stream then fails as its context ends), which says so and not to retry;
// else brokenMessage's, a server_error.
func brokenStream(err error, a *answer) (error, string, string, string) {
	if a.stopped != nil {
		if cause := a.stopped(); cause != nil {
			rf := refusalOf(cause)
			return cause, rf.typ, rf.code, rf.message
		}
	}
	code, msg := brokenMessage(err)
	return err, "server_error", code, msg
}

// brokenMessage is what a client is told of a broken stream (streamBroken):
// what happened and what to do, none of the read error's text (which may
// name the endpoint's address).
func brokenMessage(err error) (code, message string) {
	switch {
	case errors.Is(err, errEventTooLarge):
		return "model_answer_too_large", fmt.Sprintf("An event of the model's stream is larger than %d MiB, and reach does not pass on a part of it: the answer is incomplete. Ask for a shorter answer (max_tokens).", MaxAnswer>>20)
	case errors.Is(err, errStreamTooLarge):
		return "model_answer_too_large", fmt.Sprintf("The model's stream passed %d MiB (or %d texts, tool calls and ids), and reach passed on no more of it: the answer is incomplete. Ask for a shorter answer (max_tokens).", streamLimit>>20, maxParts)
	case errors.Is(err, errStreamCut):
		return "model_stream_cut", "The model's stream ended inside an event, which reach did not pass on: the answer is incomplete. Send the request again."
	case errors.Is(err, errStreamEnded):
		return "model_stream_ended", "The model's stream ended before its last event (it never said it was done): the answer may be incomplete. Send the request again."
	}
	return "model_stream_broken", "Reading the model's stream failed before its end: the answer is incomplete. Send the request again."
}

// startStream begins the answer to a stream, and returns what flushes it
// and what reads the model's lines.
func startStream(w http.ResponseWriter, resp *http.Response) (*http.ResponseController, *bufio.Scanner) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sc := bufio.NewScanner(resp.Body)
	// A line as long as a whole answer may be: a Responses stream repeats
	// a generated image (base64, some MiB) in its item's done event and in
	// response.completed, each one line; past 4 MiB the stream was cut
	// there, its end and usage lost.
	sc.Buffer(make([]byte, 64<<10), MaxAnswer)
	sc.Split(new(sseLines).split)
	return http.NewResponseController(w), sc
}

// historyIDs returns the tool call ids a chat request's messages hold, in
// their order: those of the assistant's tool calls and of the tool
// messages that answer them, and with texts (a turn that offers the model
// no tools, as a ReAct agent's) the keys of the tool calls the assistant's
// texts write (textcalls.go).
func historyIDs(messages json.RawMessage, texts bool) []string {
	var msgs []struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
	}
	if json.Unmarshal(messages, &msgs) != nil {
		return nil
	}
	var ids []string
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			if tc.ID != "" {
				ids = append(ids, tc.ID)
			}
		}
		if m.ToolCallID != "" {
			ids = append(ids, m.ToolCallID)
		}
		if texts && m.Role == "assistant" && len(m.ToolCalls) == 0 {
			if key := textHistoryKey(m.Content); key != "" { // a tool call written into the text
				ids = append(ids, key)
			}
		}
	}
	return ids
}

// jsonBoolean reports whether v is true, false or null (the member unset).
func jsonBoolean(v json.RawMessage) bool {
	switch string(bytes.TrimSpace(v)) {
	case "true", "false", "null":
		return true
	}
	return false
}

// jsonKind names the type of the JSON value v, for an error that does not
// echo the value (which may be anything, a key included).
func jsonKind(v json.RawMessage) string {
	switch v = bytes.TrimSpace(v); {
	case len(v) == 0:
		return "nothing"
	case v[0] == '"':
		return "a string"
	case v[0] == '{':
		return "an object"
	case v[0] == '[':
		return "an array"
	}
	return "a number"
}

// readMembers are the members of a turn's body that reach reads or writes.
var readMembers = []string{"model", "stream", "stream_options", "background", "n", "max_tokens", "max_completion_tokens",
	"max_output_tokens", "messages", "input", "tools", "previous_response_id", "conversation"}

// sseLines splits an event stream into its lines as the SSE format ends
// them, and as clients read them: a line feed, a carriage return and line
// feed, or a carriage return alone. A stream whose lines end with a
// carriage return alone was one line to a split at line feeds, passed on
// unread, where the client read its events one by one. A byte order mark
// that begins the stream is not part of its first line, as the format
// says: that line was not read as data.
type sseLines struct {
	afterCR bool // the last line ended with a carriage return: a line feed next is its end too
	begun   bool // past the stream's byte order mark, if any
}

func (s *sseLines) split(data []byte, atEOF bool) (int, []byte, error) {
	if !s.begun {
		bom := []byte("\xef\xbb\xbf")
		if len(data) < len(bom) && !atEOF && bytes.HasPrefix(bom, data) {
			return 0, nil, nil // not yet known
		}
		s.begun = true
		if bytes.HasPrefix(data, bom) {
			return len(bom), nil, nil
		}
	}
	if s.afterCR && len(data) > 0 {
		s.afterCR = false
		if data[0] == '\n' {
			return 1, nil, nil
		}
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		if i+1 < len(data) {
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
		// A carriage return last: the line ends here, and a line feed
		// that comes next ends it too (the event is not held back for it).
		s.afterCR = true
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// errEventTooLarge ends a stream one of whose events is larger than
// MaxAnswer: its lines are held until it ends, and a stream with no blank
// line would have been held whole, however long.
var errEventTooLarge = fmt.Errorf("an event of the model's stream is larger than %d MiB", MaxAnswer>>20)

// streamedAnswer reports whether the answer to a turn that asked for a
// stream is read as one (passStream, passEvents): an event stream by its
// media type (in any case), or a body that is not JSON whatever its type
// says. The openai SDKs read a streamed turn's answer as an event stream
// whatever its type: one that said application/json, or nothing, was
// passed on whole, only whole values masked, and a secret split across its
// chunks reached the client. The body read to tell is given back to resp.
func streamedAnswer(resp *http.Response) bool {
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil && mt == "text/event-stream" {
		return true
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	if len(b) > MaxAnswer { // passWhole says so
		return false
	}
	return err != nil || !json.Valid(b) // a stream cut short is passed as one, masked
}

// writeData writes an event's data as the data lines a client joins back
// into it (eventData): one a line of it.
func writeData(out *bytes.Buffer, data []byte) {
	for _, dl := range bytes.Split(data, []byte("\n")) {
		out.WriteString("data: ")
		out.Write(dl)
		out.WriteByte('\n')
	}
}

// eventData joins the data lines of one SSE event with line feeds, as a
// client does, for both the chat and the Responses streams; has is false
// when the event has none.
func eventData(lines [][]byte) (data []byte, has bool) {
	for _, l := range lines {
		if d, ok := bytes.CutPrefix(l, []byte("data:")); ok {
			if has {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
			has = true
		}
	}
	return data, has
}

// hostedMCP reports whether the tools of a turn's body hold a hosted MCP
// tool (type "mcp", in any case, under a key "type" in any case: a server
// in Go reads it so), and its server_label, clipped to 64 bytes.
func hostedMCP(tools json.RawMessage) (label string, ok bool) {
	var list []json.RawMessage
	if json.Unmarshal(tools, &list) != nil {
		return "", false
	}
	for _, raw := range list {
		var tool map[string]json.RawMessage
		if json.Unmarshal(raw, &tool) != nil {
			continue
		}
		for k, v := range tool {
			var typ string
			if !strings.EqualFold(k, "type") || json.Unmarshal(v, &typ) != nil || !strings.EqualFold(typ, "mcp") {
				continue
			}
			json.Unmarshal(tool["server_label"], &label)
			if len(label) > 64 {
				label = strings.ToValidUTF8(label[:64], "") + "…"
			}
			return label, true
		}
	}
	return "", false
}
