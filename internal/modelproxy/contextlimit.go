package modelproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/openai"
)

// overContext is the refusal of a turn to model whose prompt (body, after
// any fold; prompt, estimated once for the turn as the token budget
// estimates it, with a stored conversation's history: promptEstimate) and the answer it asks for (max_tokens or its
// like, when set) do not fit the context window model.context_limits lists
// for model: its provider would refuse it. nil when it fits, or when the
// model is not listed (its window is not known: no check).
func (p *Proxy) overContext(api apiKind, body map[string]json.RawMessage, estimate func() int64, model string) *reach.Error {
	limit := p.opts.Model.ContextLimits[model]
	if limit <= 0 {
		return nil
	}
	prompt := estimate()
	asked := windowAsked(api, body)
	if addTokens(prompt, asked) <= limit {
		return nil
	}
	msg := fmt.Sprintf("This turn's prompt is about %d tokens, and model %s holds at most %d (its context window, model.context_limits): it was not sent to the model.",
		prompt, model, limit)
	if asked > 0 && prompt <= limit {
		msg = fmt.Sprintf("This turn's prompt is about %d tokens and it asks for an answer of up to %d, and model %s holds at most %d (its context window, model.context_limits): it was not sent to the model.",
			prompt, asked, model, limit)
	}
	return &reach.Error{Guard: "admit", Type: reach.TypeInvalidArgs, Code: "context_length_exceeded", Message: msg,
		Suggestion: "Shorten the conversation's history (drop or summarize older messages and tool results, or ask for a shorter answer), then send the turn again; sent as it is, it is refused again."}
}

// refuseContext refuses a turn overContext refuses, before it is begun:
// it reaches no model and spends none of its request's turns, and is
// recorded as a refused model frame (as refuseRate's). The answer is a 403
// no SDK retries (x-should-retry: false; a 400 the OpenAI SDKs would not
// retry either, but LangChain's would), its message saying what to do.
func (p *Proxy) refuseContext(ctx context.Context, w http.ResponseWriter, req *reach.Request, api apiKind, body map[string]json.RawMessage,
	prompt func() int64, model, route string) bool {
	e := p.overContext(api, body, prompt, model)
	if e == nil {
		return false
	}
	if mr, ok := p.opts.Models.(ModelRefuser); ok {
		mr.RefuseModelTurn(reach.WithRoute(ctx, route), model, e)
	}
	p.log.Info("model turn refused: its prompt does not fit the model's context window", "request", req.ID(), "model", model)
	w.Header().Set(link.HeaderRequest, req.ID())
	w.Header().Set("X-Should-Retry", "false")
	proxyError(w, http.StatusForbidden, "invalid_request_error", e.Code, e.Message+" "+e.Suggestion)
	return true
}

// promptEstimate is a turn's prompt as counted before it is sent, made
// once when first asked for (its body encoded, plus what its images count
// past the bytes that name them, plus a stored conversation's history):
// window, about four bytes a token, for the context window's check (which
// refuses only what surely does not fit); budget, upper-leaning
// (promptTokens), and the model's whole context window when the prompt
// names a file it does not hold (fileRefs), for the token budget and its
// holds (a budget is never spent past its end by a prompt it missed).
type promptEstimate struct {
	p     *Proxy
	api   apiKind
	body  map[string]json.RawMessage
	who   *auth.Identity
	model string

	done     bool
	win, bud int64
	files    int // file parts named by id or URL
}

func (p *Proxy) promptEstimate(api apiKind, body map[string]json.RawMessage, who *auth.Identity, model string) *promptEstimate {
	return &promptEstimate{p: p, api: api, body: body, who: who, model: model}
}

func (e *promptEstimate) count() {
	if e.done {
		return
	}
	e.done = true
	out, _ := json.Marshal(e.body)
	kept := e.p.kept(e.api, e.body, e.who)
	e.win = openai.EstimateTokens(len(out)) + kept
	e.bud = promptTokens(out) + kept
	// A name or type may be written with \u escapes, which the endpoint
	// decodes as json.Unmarshal does ({"typ\u0065":"file"}): a body that
	// escapes a letter or '_' is read too.
	escaped := escapesALetter(out)
	if escaped || bytes.Contains(out, []byte(`"image_url"`)) || bytes.Contains(out, []byte(`"input_image"`)) {
		n := imageTokens(e.api, e.body) // read again only when it may name one
		e.win += n
		e.bud += n
	}
	// out is compact JSON (json.Marshal compacts a RawMessage): a file
	// part says "type":"file" or "type":"input_file" as it is, never
	// escaped text that quotes one.
	if escaped || bytes.Contains(out, []byte(`"type":"file"`)) || bytes.Contains(out, []byte(`"type":"input_file"`)) {
		if e.files = fileRefs(e.api, e.body); e.files > 0 {
			e.bud = max(e.bud, e.p.fileWindow(e.model))
		}
	}
}

// escapesALetter reports whether body holds a \u escape of an ASCII
// letter or '_' (\u0040 to \u007f), which no encoder needs to write;
// json.Marshal's own escapes (<, >, &, U+2028, U+2029) are not.
func escapesALetter(body []byte) bool {
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte(`\u00`))
		if j < 0 {
			return false
		}
		i += j + 4
		if i < len(body) && body[i] >= '4' && body[i] <= '7' {
			return true
		}
	}
}

// window is the estimate for the context window's check.
func (e *promptEstimate) window() int64 { e.count(); return e.win }

// budget is the estimate for the token budget.
func (e *promptEstimate) budget() int64 { e.count(); return e.bud }

// defaultFileWindow is the context window taken of a model whose own is
// not configured (model.context_limits), for a prompt that names a file:
// 128,000 tokens, that of the chat models in use (gpt-4o, gpt-4-turbo).
const defaultFileWindow = 128_000

// fileWindow is the most a prompt that names a file may count, to the
// models a turn that asks for model may be sent to: the largest context
// window of model and the fallbacks' models (model.context_limits, else
// defaultFileWindow). What a file by id or URL holds (a PDF's text and
// its pages' images) is known to the endpoint only, and a prompt is never
// more than the window it is sent to.
func (p *Proxy) fileWindow(model string) int64 {
	mc := p.opts.Model
	limit := func(m string) int64 {
		if v := mc.ContextLimits[m]; v > 0 {
			return v
		}
		return defaultFileWindow
	}
	l := limit(model)
	for _, f := range mc.Fallbacks {
		if f.Model != "" {
			l = max(l, limit(f.Model))
		}
	}
	return l
}

// fileRefs counts the file parts of a turn's messages (chat: a file
// part) or input items (Responses API: an input_file, in an item's content
// or a function call's output: partLists), whether they name
// their file by id or URL or inline it (file_data): what the model reads
// of a file (a PDF's text and an image of each page) is the endpoint's
// to tell, and no count of its bytes bounds it.
func fileRefs(api apiKind, body map[string]json.RawMessage) int {
	raw := body["messages"]
	if api == responsesAPI {
		raw = body["input"]
	}
	n := 0
	for _, ps := range partLists(raw) {
		var parts []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(ps, &parts) != nil {
			continue
		}
		for _, part := range parts {
			if part.Type == "input_file" || part.Type == "file" {
				n++
			}
		}
	}
	return n
}

// partLists are the lists of parts of a turn's messages or input items:
// each one's content, and (Responses API) a function call's output, which
// may be parts too (input_text, input_image, input_file).
func partLists(raw json.RawMessage) []json.RawMessage {
	var items []struct {
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []json.RawMessage
	for _, it := range items {
		out = append(out, it.Content, it.Output)
	}
	return out
}

// Image parts as a model counts them: OpenAI's high (or auto) detail
// image of 1024 by 1024 pixels is 765 tokens, one at detail low 85,
// whatever the length of the URL that names it.
const (
	imageTokensHigh = 765
	imageTokensLow  = 85
)

// imageTokens is what the image parts of a turn's messages (chat:
// image_url) or input items (Responses API: input_image) count past the
// bytes of the part itself, which the body's estimate counts already: an
// image named by a short URL is hundreds of tokens to the model, not a
// dozen (a data URL's bytes count more than the image already).
func imageTokens(api apiKind, body map[string]json.RawMessage) int64 {
	raw := body["messages"]
	if api == responsesAPI {
		raw = body["input"]
	}
	var n int64
	for _, ps := range partLists(raw) {
		var parts []json.RawMessage
		if json.Unmarshal(ps, &parts) != nil {
			continue
		}
		for _, part := range parts {
			var img struct {
				Type     string          `json:"type"`
				Detail   string          `json:"detail"`
				ImageURL json.RawMessage `json:"image_url"`
			}
			if json.Unmarshal(part, &img) != nil || img.Type != "image_url" && img.Type != "input_image" {
				continue
			}
			detail := img.Detail
			var u struct {
				Detail string `json:"detail"`
			}
			if json.Unmarshal(img.ImageURL, &u) == nil && u.Detail != "" {
				detail = u.Detail
			}
			count := int64(imageTokensHigh)
			if detail == "low" {
				count = imageTokensLow
			}
			n += max(count-openai.EstimateTokens(len(part)), 0)
		}
	}
	return n
}

// lenientCount reads a count as a lenient server reads it (pydantic's lax
// mode: 1e3, 1000.0 and "1000" are 1000), saturated at the largest int64;
// 0 for none, a negative or a fraction.
func lenientCount(raw json.RawMessage) int64 {
	s := strings.TrimSpace(string(raw))
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || f < 1 || math.IsNaN(f) {
		return 0
	}
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(f)
}

// windowAsked is the answer a turn asks for, as the context window's check
// counts it: the largest of its limits (a provider may read either of
// max_completion_tokens and max_tokens), times its choices (n), however
// large (saturated, never wrapped around to a sum that fits), or 0 when it
// sets none.
func windowAsked(api apiKind, body map[string]json.RawMessage) int64 {
	keys := []string{"max_completion_tokens", "max_tokens"}
	if api == responsesAPI {
		keys = []string{"max_output_tokens"}
	}
	var asked int64
	for _, k := range keys {
		if v := lenientCount(body[k]); v > asked {
			asked = v
		}
	}
	if n := choices(body["n"]); asked > 0 && n > 1 {
		if asked > math.MaxInt64/n {
			return math.MaxInt64
		}
		asked *= n
	}
	return asked
}
