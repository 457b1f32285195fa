package gateway

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// The model proxy (E3): POST /v1/chat/completions is forwarded to the
// configured model's base_url, as a model frame of the caller's request.
//
//   - The request is the one named by "baggage: reach.request=<id>" or the
//     Reach-Request header, or a new one; the frame nests under the frame
//     named by Reach-Parent or a traceparent's parent span (a tool's
//     implementation calling the model forwards the headers reach gave it).
//   - Before forwarding, the frame passes admit and budgets: a spent budget
//     or a stopped request is an OpenAI-style error with HTTP 429 and type
//     "budget_exceeded", which agent frameworks surface as is.
//   - The tokens of the answer's usage (the final chunk of a stream; reach
//     asks for it with stream_options.include_usage, and passes it on only
//     to a client that asked for it too) are charged to the request, with
//     their cost from the price table.
//   - The tool calls the model chose are remembered by their id: when the
//     agent sends one to /v1/calls (call_id) or MCP (_meta "reach/call_id"),
//     it becomes the model frame's child.
//
// The answer carries the Reach-Request and Reach-Frame headers.

// HeaderRequest names the request of a model proxy call or an API call.
const (
	HeaderRequest = "Reach-Request"
	HeaderFrame   = "Reach-Frame"
)

// chosenCalls maps the ids of the tool calls models chose to their model
// frames, keeping the newest max.
type chosenCalls struct {
	mu    sync.Mutex
	max   int
	m     map[string]*reach.Frame
	order []string
}

func (c *chosenCalls) put(id string, f *reach.Frame) {
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*reach.Frame{}
		if c.max == 0 {
			c.max = 10000
		}
	}
	if _, ok := c.m[id]; !ok {
		c.order = append(c.order, id)
	}
	c.m[id] = f
	for len(c.order) > c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *chosenCalls) get(id string) *reach.Frame {
	if id == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

// defaultModel is the model the proxy asks for when neither the client
// nor the configuration names one.
const defaultModel = "gpt-4o-mini"

// costBudgeted reports whether r or a request above it has a cost budget.
func costBudgeted(r *reach.Request) bool {
	for ; r != nil; r = r.Parent() {
		if r.Budget().Cost > 0 {
			return true
		}
	}
	return false
}

// proxyError is an OpenAI-style error body.
func proxyError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}})
}

// chatCompletions is POST /v1/chat/completions.
func (g *Gateway) chatCompletions(w http.ResponseWriter, r *http.Request) {
	mc := g.cfg.Model
	if mc == nil || mc.BaseURL == "" {
		proxyError(w, http.StatusNotFound, "invalid_request_error", "no_model",
			"No model is configured: set model.base_url in the configuration to use the model proxy.")
		return
	}
	data, ok := readBody(w, r)
	if !ok {
		return
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(data, &body); err != nil {
		proxyError(w, http.StatusBadRequest, "invalid_request_error", "bad_body", "The body is not a JSON object: "+err.Error())
		return
	}
	var model string
	var stream bool
	json.Unmarshal(body["model"], &model)
	json.Unmarshal(body["stream"], &stream)
	if model == "" {
		model = cmp.Or(mc.Name, defaultModel)
		body["model"], _ = json.Marshal(model)
	}
	clientUsage := true
	if stream {
		// Ask for the usage chunk, keeping any other stream option; a
		// client that did not ask for it does not get it.
		so := map[string]any{}
		json.Unmarshal(body["stream_options"], &so)
		clientUsage = so["include_usage"] == true
		so["include_usage"] = true
		body["stream_options"], _ = json.Marshal(so)
	}
	out, _ := json.Marshal(body)

	l, err := linkFromHeaders(r.Header)
	if err != nil {
		proxyError(w, http.StatusBadRequest, "invalid_request_error", "bad_parent", err.Error())
		return
	}
	l.Agent = "model-proxy"
	ctx, req, done, err := g.place(r.Context(), l, func() (*reach.Request, func(), error) {
		who, _ := auth.IdentityFrom(r.Context())
		return g.reqs.fresh(l.Agent, nil, who)
	})
	if err != nil {
		var le *linkError
		if errors.As(err, &le) {
			proxyError(w, le.Status, "invalid_request_error", le.Code, le.Message+" "+le.Suggestion)
			return
		}
		proxyError(w, http.StatusInternalServerError, "server_error", "internal", err.Error())
		return
	}
	defer done()
	if _, priced := mc.Prices[model]; !priced && costBudgeted(req) {
		names := make([]string, 0, len(mc.Prices))
		for n := range mc.Prices {
			names = append(names, n)
		}
		slices.Sort(names)
		w.Header().Set(HeaderRequest, req.ID())
		proxyError(w, http.StatusBadRequest, "invalid_request_error", "unpriced_model",
			fmt.Sprintf("Request %s has a cost budget, and model %q has no price (model.prices), so its cost could not be counted. Use a priced model (%s), or ask the operator to price this one.",
				req.ID(), model, strings.Join(names, ", ")))
		return
	}
	mctx, mf, err := g.rt.BeginModel(ctx, model)
	if err != nil {
		code := "refused"
		msg := err.Error()
		var re *reach.Error
		if errors.As(err, &re) {
			code = re.Code
			msg = strings.TrimSpace(re.Message + " " + re.Suggestion)
		}
		w.Header().Set(HeaderRequest, req.ID())
		proxyError(w, http.StatusTooManyRequests, "budget_exceeded", code, msg)
		return
	}
	w.Header().Set(HeaderRequest, req.ID())
	w.Header().Set(HeaderFrame, mf.ID.String())

	timeout := time.Duration(mc.Timeout)
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	if stream {
		timeout = max(timeout, 10*time.Minute)
	}
	uctx, cancel := context.WithTimeout(mctx, timeout)
	defer cancel()
	url := strings.TrimSuffix(mc.BaseURL, "/") + "/chat/completions"
	ureq, err := http.NewRequestWithContext(uctx, http.MethodPost, url, bytes.NewReader(out))
	if err != nil {
		mf.FailModel(err)
		proxyError(w, http.StatusBadGateway, "server_error", "bad_upstream", "The model URL is not usable.")
		return
	}
	ureq.Header.Set("Content-Type", "application/json")
	if k := mc.APIKey.Reveal(); k != "" {
		ureq.Header.Set("Authorization", "Bearer "+k)
	} else if a := r.Header.Get("Authorization"); a != "" && !g.authConfigured() {
		ureq.Header.Set("Authorization", a)
	}
	if stream {
		ureq.Header.Set("Accept", "text/event-stream")
	}
	resp, err := g.proxyClient().Do(ureq)
	if err != nil {
		switch {
		case r.Context().Err() != nil: // the client left: nobody to answer
			mf.FailModel(context.Cause(r.Context()))
		case mctx.Err() != nil: // the request was stopped, or its budget ran out, meanwhile
			cause := context.Cause(mctx)
			mf.FailModel(cause)
			proxyError(w, http.StatusTooManyRequests, "budget_exceeded", "request_stopped",
				"The request was stopped while the model was answering: "+cause.Error()+". Do not retry this request; start a new one if the work must go on.")
		default:
			mf.FailModel(err)
			proxyError(w, http.StatusBadGateway, "server_error", "model_unreachable", "The model endpoint did not answer: "+redactURL(err.Error(), url))
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		mf.FailModel(fmt.Errorf("the model endpoint answered %s", resp.Status))
		copyHeader(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		w.Write(b)
		return
	}
	var use reach.TokenUsage
	var ids []string
	if stream && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		use, ids, err = g.passStream(w, resp, !clientUsage)
	} else {
		use, ids, err = passWhole(w, resp)
	}
	if err != nil {
		mf.FailModel(err)
		return
	}
	mf.EndModel(use)
	for _, id := range ids {
		g.chosen.put(id, mf)
	}
}

// authConfigured reports whether the gateway authenticates its clients (the
// client's Authorization header is then reach's, not the model's).
func (g *Gateway) authConfigured() bool { return g.authn != nil }

func (g *Gateway) proxyClient() *http.Client { return g.proxyHTTP }

func copyHeader(dst, src http.Header) {
	for _, k := range []string{"Content-Type", "X-Request-Id", "Openai-Processing-Ms", "Retry-After"} {
		if v := src.Get(k); v != "" {
			dst.Set(k, v)
		}
	}
}

// completion is the part of a chat completion (or a chunk of one) the
// proxy reads.
type completion struct {
	Choices []struct {
		Message *struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"message"`
		Delta *struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		Prompt     int64 `json:"prompt_tokens"`
		Completion int64 `json:"completion_tokens"`
	} `json:"usage"`
}

func (c *completion) note(use *reach.TokenUsage, ids *[]string, text *strings.Builder) {
	if c.Usage != nil {
		use.Input, use.Output = c.Usage.Prompt, c.Usage.Completion
	}
	for _, ch := range c.Choices {
		if m := ch.Message; m != nil {
			text.WriteString(m.Content)
			for _, tc := range m.ToolCalls {
				*ids = append(*ids, tc.ID)
			}
		}
		if d := ch.Delta; d != nil {
			text.WriteString(d.Content)
			for _, tc := range d.ToolCalls {
				if tc.ID != "" {
					*ids = append(*ids, tc.ID)
				}
			}
		}
	}
}

// passWhole copies a JSON answer and reads its usage and tool call ids.
func passWhole(w http.ResponseWriter, resp *http.Response) (reach.TokenUsage, []string, error) {
	var use reach.TokenUsage
	var ids []string
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		proxyError(w, http.StatusBadGateway, "server_error", "model_read", "Reading the model's answer failed.")
		return use, nil, fmt.Errorf("reading the model's answer: %w", err)
	}
	var c completion
	var text strings.Builder
	if json.Unmarshal(b, &c) == nil {
		c.note(&use, &ids, &text)
	}
	use.Text = text.String()
	copyHeader(w.Header(), resp.Header)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	return use, ids, nil
}

// passStream copies an SSE answer event by event, flushing each, and reads
// the usage (final chunk) and tool call ids on the way.
func (g *Gateway) passStream(w http.ResponseWriter, resp *http.Response, dropUsage bool) (reach.TokenUsage, []string, error) {
	var use reach.TokenUsage
	var ids []string
	var text strings.Builder
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			d = bytes.TrimSpace(d)
			if !bytes.Equal(d, []byte("[DONE]")) {
				var c completion
				if json.Unmarshal(d, &c) == nil {
					c.note(&use, &ids, &text)
					if dropUsage && c.Usage != nil && len(c.Choices) == 0 {
						continue // the usage chunk reach asked for
					}
				}
			}
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return use, ids, fmt.Errorf("the client went away: %w", err)
		}
		if len(line) == 0 {
			rc.Flush()
		}
	}
	rc.Flush()
	use.Text = text.String()
	if err := sc.Err(); err != nil {
		return use, ids, fmt.Errorf("reading the model's stream: %w", err)
	}
	return use, ids, nil
}
