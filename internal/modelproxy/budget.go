package modelproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/openai"
)

// A model turn and the request's token budget. The proxy caps the answer a
// model may give at what the request (and every request above it) has left
// once the prompt is counted, and refuses a prompt that alone would spend
// it; a refusal is final, so it is answered in a way no client retries.
//
// What clients retry (read in their sources): the OpenAI SDKs obey
// x-should-retry when it is set and otherwise retry 408, 409, 429 and 5xx;
// the AI SDK's providers retry 408, 409, 429 and 5xx and do not read
// x-should-retry; LangChain retries any status but 400-407, 409 and 413
// (and a 429 whose code is insufficient_quota). A spent budget is
// therefore 402 (a quota, as OpenAI-compatible gateways answer an account
// out of credit) and a stopped request 403, both with x-should-retry:
// false.

// tokenBudgeted reports whether r or a request above it has a token
// budget.
func tokenBudgeted(r *reach.Request) bool {
	for q := r; q != nil; q = q.Parent() {
		if q.Budget().Tokens > 0 {
			return true
		}
	}
	return false
}

// minOutputTokens is the least max_output_tokens the Responses API takes.
const minOutputTokens = 16

// lowBudget is the answer length below which a capped turn is told that
// the budget is almost spent.
const lowBudget = 2048

// defaultOutputLimit is the output limit taken of a model whose own is
// not configured (model.output_limits): 4096 tokens, the least of the
// chat models in use (gpt-3.5-turbo's, gpt-4-turbo's), which every
// provider takes as a cap.
const defaultOutputLimit = 4096

// outputLimit is the most tokens an answer to a turn that asks for model
// may hold at the endpoints it may be sent to: the least of the output
// limits of model and the fallbacks' models (model.output_limits, else
// defaultOutputLimit).
func (p *Proxy) outputLimit(model string) int64 {
	l, _ := p.listedOutputLimit(model)
	return l
}

// listedOutputLimit is outputLimit, and whether each of the models was
// listed (model.output_limits): then no answer is longer, and a turn that
// sets no cap holds no more than that.
func (p *Proxy) listedOutputLimit(model string) (int64, bool) {
	mc := p.opts.Model
	listed := true
	limit := func(m string) int64 {
		if v := mc.OutputLimits[m]; v > 0 {
			return v
		}
		listed = false
		return defaultOutputLimit
	}
	l := limit(model)
	for _, f := range mc.Fallbacks {
		if f.Model != "" {
			l = min(l, limit(f.Model))
		}
	}
	return l, listed
}

// capTokens caps the answer of a request (its decoded body) to api at
// answerMax tokens. A chat request's is max_completion_tokens or
// max_tokens, whichever the client set (both, if it set both), else
// max_completion_tokens. Both bound each choice, and the answer's usage
// counts all of them: a request for n choices has each capped at an n-th.
// A Responses API request's is max_output_tokens. A request that sets
// none is sent one only when answerMax is below outputLimit, what the
// model could write anyway: a provider refuses a cap above its model's
// output limit ("max_tokens is too large"), and the whole of a large
// budget's remainder is. Without a cap the turn is charged what its
// answer used, and a request whose budget that spends is stopped. It
// reports whether the cap is below what the client asked for (or below
// lowBudget when it asked for no limit).
func capTokens(api apiKind, body map[string]json.RawMessage, answerMax, outputLimit int64) bool {
	if n := choices(body["n"]); n > 1 {
		answerMax = max(answerMax/n, 1)
	}
	keys := []string{"max_completion_tokens", "max_tokens"}
	if api == responsesAPI {
		keys = []string{"max_output_tokens"}
		// OpenAI answers a max_output_tokens under 16 with a 400 the agent
		// cannot act on; a turn that may spend up to 15 tokens more than
		// the budget left ends the run as the budget would.
		answerMax = max(answerMax, minOutputTokens)
	}
	capped := false
	set := false
	for _, k := range keys {
		raw, ok := body[k]
		if !ok || string(raw) == "null" {
			continue
		}
		set = true
		var asked int64
		if json.Unmarshal(raw, &asked) != nil || asked <= 0 || asked > answerMax {
			body[k], _ = json.Marshal(answerMax)
			capped = true
		}
	}
	if !set {
		if answerMax < outputLimit {
			body[keys[0]], _ = json.Marshal(answerMax)
		}
		capped = answerMax < lowBudget
	}
	return capped
}

// choices reads a request's n as the servers behind the route do: a JSON
// number without a fraction (4.0 is an integer to JSON Schema, and to
// pydantic), or a string of one (pydantic's lax mode); 1 for anything
// else. (As an int64 alone, 4.0 and "4" were read as one choice, each of
// the four then capped at the whole answer.) One above maxChoices is read
// as maxChoices: it is at least that many (1e12 was read as one choice,
// and passed on as it was).
func choices(raw json.RawMessage) int64 {
	if n := lenientCount(raw); n >= 1 {
		return min(n, maxChoices)
	}
	return 1
}

// askFewer begins the suggestion of tooManyChoices, which refuse passes on
// in place of its "finish with what you have".
const askFewer = "Ask again with n at most"

// maxChoices is the most choices (n) a turn is counted as asking for.
const maxChoices = 1 << 31

// tooManyChoices is the refusal of a chat turn that asks for more choices
// (n) than there are tokens left for its answer: each choice spends one
// at least, so that, each capped at one, they would spend past the budget.
func tooManyChoices(req *reach.Request, n, left int64) *reach.Error {
	return &reach.Error{Guard: "admit", Type: reach.TypeBudget, Code: "budget_tokens",
		Message: fmt.Sprintf("The budget of request %s (its tokens, or its cost at this model's price) leaves this turn's answer %d tokens once its prompt is counted, and it asks for %d choices (n), each of which spends a token at least.",
			req.ID(), max(left, 0), n),
		Suggestion: fmt.Sprintf(askFewer+" %d, or without n (one choice).", max(left, 0))}
}

// finishNote is the system message a turn gets when the budget left caps
// its answer: the model is told to finish with what it has.
func finishNote(left int64) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"role": "system", "content": fmt.Sprintf(
		"Agent-Reach: this request's token budget has about %d tokens left for this answer, and then it is spent. "+
			"Finish now with what you have: give your final answer without further tool calls.", left)})
	return b
}

// noteTokens is the most a turn's finish note (and the wrapping of a
// Responses API request's text input, to hold it) adds to its prompt.
var noteTokens = openai.EstimateTokens(len(finishNote(math.MaxInt64)) + 64)

// withNote appends a system message to a chat request's messages, or to a
// Responses API request's input (whose text alone, a string, is the
// user's message).
func withNote(api apiKind, body map[string]json.RawMessage, note json.RawMessage) {
	member := "messages"
	if api == responsesAPI {
		member = "input"
		var text string
		if json.Unmarshal(body[member], &text) == nil {
			body[member], _ = json.Marshal([]any{map[string]string{"role": "user", "content": text}, note})
			return
		}
	}
	var msgs []json.RawMessage
	if json.Unmarshal(body[member], &msgs) != nil {
		return
	}
	body[member], _ = json.Marshal(append(msgs, note))
}

// refuse answers a model turn that reach refused (err from BeginModel, the
// shared ledger, or the prompt's budget check): 503 for a refusal that may
// pass in a moment (the shared store did not answer), which clients retry;
// 402 budget_exceeded for a spent budget, 403 for anything else (a stopped
// request), never to be retried, with a message that tells the agent to
// finish with what it has.
func refuse(w http.ResponseWriter, req *reach.Request, err error) {
	if req != nil {
		w.Header().Set(link.HeaderRequest, req.ID())
	}
	rf := refusalOf(err)
	if rf.status == http.StatusServiceUnavailable {
		w.Header().Set("X-Should-Retry", "true")
		w.Header().Set("Retry-After", "1")
	} else {
		w.Header().Set("X-Should-Retry", "false")
	}
	proxyError(w, rf.status, rf.typ, rf.code, rf.message)
}

// refusal is what the client of a refused model turn is told: its HTTP
// status, and the OpenAI-style error's type, code and message.
type refusal struct {
	status             int
	typ, code, message string
}

// refusalOf is the refusal of err (refuse): 503 for a refusal that may
// pass in a moment (the shared store did not answer), which clients retry;
// 402 budget_exceeded for a spent budget, 403 request_stopped for anything
// else (a stopped request), never to be retried, with a message that tells
// the agent to finish with what it has.
func refusalOf(err error) refusal {
	code, msg, budget := "refused", err.Error(), false
	var re *reach.Error
	var se *reach.StopError
	switch {
	case errors.As(err, &re):
		code, msg = re.Code, re.Message
		budget = re.Type == reach.TypeBudget
	case errors.As(err, &se):
		code, msg = "stopped", upperFirst(se.Error())+"."
		if se.Cause.Budget != "" {
			code, budget = "budget_"+se.Cause.Budget, true
		}
	}
	if re != nil && re.Type == reach.TypeTransient {
		// The shared store did not answer, an instance is stopping:
		// nothing was decided, and the same turn may pass in a moment. A
		// 503 is what clients retry, after Retry-After.
		return refusal{http.StatusServiceUnavailable, "server_error", code, strings.TrimSpace(msg + " " + re.Suggestion)}
	}
	if budget && re != nil && re.Guard == "admit" && (strings.HasPrefix(re.Suggestion, askFewer) || strings.HasPrefix(re.Suggestion, sendFileText)) {
		// The same turn asking for fewer choices fits, or may with the
		// file's text in place of its id: the model is told that, not to
		// finish (tooManyChoices, promptTooLarge).
		return refusal{http.StatusPaymentRequired, "budget_exceeded", code, msg + " " + re.Suggestion}
	}
	if budget {
		return refusal{http.StatusPaymentRequired, "budget_exceeded", code, msg + finish}
	}
	return refusal{http.StatusForbidden, "request_stopped", code, msg + finish}
}

// finish ends the message of a refused model turn.
const finish = " Do not retry this model call: finish with what you have and give your final answer."

// sendFileText begins the suggestion of a prompt refused for a file it
// names by id or URL, which refuse passes on in place of its "finish
// with what you have".
const sendFileText = "Send the file's text"

// promptTooLarge is the refusal of a prompt that alone needs more tokens
// than the budget has left. One that names a file by id or URL is told
// that the file counted as the model's context window, and what to do.
func promptTooLarge(req *reach.Request, a ask, left int64) *reach.Error {
	e := &reach.Error{Guard: "admit", Type: reach.TypeBudget, Code: "budget_tokens",
		Message: fmt.Sprintf("The token budget of request %s has %d tokens left, and this prompt alone is about %d tokens.",
			req.ID(), left, a.prompt),
		Suggestion: "Shorten the conversation (or ask for a larger budget)."}
	if a.files > 0 {
		e.Message = fmt.Sprintf("The token budget of request %s has %d tokens left, and this prompt holds %d file(s) (named by id or URL, or inlined), whose tokens the model alone knows before it is sent: it counts as the model's whole context window, %d tokens.",
			req.ID(), left, a.files, a.prompt)
		e.Suggestion = sendFileText + " (or the part you need) in the message instead, or ask for a larger budget."
	}
	return e
}

// promptTooCostly is the refusal of a prompt that alone costs more, at
// its model's price, than the cost budget has left (left, nano-units).
func promptTooCostly(req *reach.Request, a ask, left int64) *reach.Error {
	return &reach.Error{Guard: "admit", Type: reach.TypeBudget, Code: "budget_cost",
		Message: fmt.Sprintf("The cost budget of request %s has %.6f left, and this prompt alone (about %d tokens%s) costs about %.6f at this model's price.",
			req.ID(), float64(left)/1e9, a.prompt, filesCounted(a), float64(a.promptCost())/1e9),
		Suggestion: "Shorten the conversation, use a cheaper model (or ask for a larger budget)."}
}

// filesCounted says, in a refusal, that a prompt's files named by id or
// URL counted as the model's whole context window.
func filesCounted(a ask) string {
	if a.files == 0 {
		return ""
	}
	return fmt.Sprintf(", its %d file(s) named by id or URL counted as the model's whole context window, their tokens not known before it is sent", a.files)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
