package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/openai"
)

// Model answers the model calls that built-in tools make (the formatter).
// Implementations must be safe for concurrent use.
type Model interface {
	// Name is the model's name, recorded on its frames.
	Name() string
	// Complete answers one model call: text, or tool calls to make first
	// (of the tools offered).
	Complete(ctx context.Context, msgs []openai.Message, tools []reach.Tool) (*Reply, error)
}

// Timeouter is a Model whose calls each have a time bound: a tool that
// asks it bounds itself by that, not by the runtime's default.
type Timeouter interface {
	Timeout() time.Duration
}

// Reply is a model's answer: text, or tool calls (each run through the
// runtime under the model's frame, their results sent back as tool
// messages).
type Reply struct {
	Text      string
	ToolCalls []reach.Call
	Usage     reach.TokenUsage
}

// Scripted is the stand-in used when no model is configured: it first
// asks for search_kb with the user's text (when offered), then formats the
// text with the first result as its source. Deterministic and free.
type Scripted struct{}

// Name implements Model.
func (Scripted) Name() string { return "scripted" }

// Complete implements Model.
func (Scripted) Complete(_ context.Context, msgs []openai.Message, tools []reach.Tool) (*Reply, error) {
	var user, tool string
	for _, m := range msgs {
		switch m.Role {
		case "user":
			user = m.Content
		case "tool":
			tool = m.Content
		}
	}
	in := int64(len(strings.Fields(user)) + len(strings.Fields(tool)) + 20)
	if tool == "" && slices.ContainsFunc(tools, func(t reach.Tool) bool { return t.Name == "search_kb" }) {
		args, _ := json.Marshal(map[string]any{"query": user, "limit": 1})
		return &Reply{ToolCalls: []reach.Call{{ID: "kb", Tool: "search_kb", Arguments: args}},
			Usage: reach.TokenUsage{Input: in, Output: 12}}, nil
	}
	text := "**Answer:** " + strings.TrimSpace(user)
	var found struct {
		Results []struct {
			Title string `json:"title"`
		} `json:"results"`
	}
	if json.Unmarshal([]byte(tool), &found) == nil && len(found.Results) > 0 {
		text += "\n\n_Source: " + found.Results[0].Title + "_"
	}
	return &Reply{Text: text, Usage: reach.TokenUsage{Input: in, Output: int64(len(strings.Fields(text))), Text: text}}, nil
}

// OpenAI is a Model served by an OpenAI-compatible chat completions
// endpoint: it offers the model the tools it is given, as functions, and
// passes on the tool calls the model chooses. Make one with NewOpenAI.
type OpenAI struct {
	name    string
	timeout time.Duration
	client  *openai.Client
}

// NewOpenAI returns the model name (if empty, openai.DefaultModel) of the
// endpoint baseURL, asked with apiKey, each call bounded by timeout (if
// zero, 60s).
func NewOpenAI(baseURL, apiKey, name string, timeout time.Duration) *OpenAI {
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	if name == "" {
		name = openai.DefaultModel
	}
	return &OpenAI{name: name, timeout: timeout, client: &openai.Client{BaseURL: baseURL, APIKey: apiKey,
		HTTP: &http.Client{Timeout: timeout}, MaxAnswer: 4 << 20}}
}

// Timeout implements Timeouter: the bound of one call.
func (m *OpenAI) Timeout() time.Duration { return m.timeout }

// Name implements Model.
func (m *OpenAI) Name() string { return m.name }

// Complete implements Model. Its failures are tool errors: unavailable
// (the endpoint did not answer, or answered 429 or 5xx) or model_error.
func (m *OpenAI) Complete(ctx context.Context, msgs []openai.Message, tools []reach.Tool) (*Reply, error) {
	client := m.client
	if f, ok := reach.FrameFrom(ctx); ok { // the model's spans join the trace, under this call's
		c := *m.client
		c.Header = http.Header{link.HeaderTraceparent: {link.Traceparent(f.Request, f.ID)}}
		client = &c
	}
	req := &openai.Request{Model: m.name, Messages: msgs}
	for _, t := range tools {
		params := t.InputSchema
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object"}`)
		}
		req.Tools = append(req.Tools, openai.ToolDef{Type: "function", Function: openai.FunctionDef{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	resp, err := client.Complete(ctx, req)
	var oe *openai.Error
	if errors.As(err, &oe) {
		switch oe.Kind {
		case openai.Unreachable:
			return nil, &reach.ToolError{Type: "unavailable", Message: "the model endpoint did not answer: " + oe.Err.Error()}
		case openai.Unreadable:
			return nil, &reach.ToolError{Type: "unavailable", Message: "reading the model's answer failed"}
		case openai.BadStatus:
			typ := "model_error"
			if oe.StatusCode == http.StatusTooManyRequests || oe.StatusCode >= 500 {
				typ = "unavailable"
			}
			return nil, &reach.ToolError{Type: typ, Message: fmt.Sprintf("the model endpoint answered %s", oe.Status)}
		default:
			return nil, &reach.ToolError{Type: "model_error", Message: "the model's answer is not a chat completion"}
		}
	}
	if err != nil {
		return nil, err
	}
	text := resp.Message.Content
	reply := &Reply{Text: text, Usage: reach.TokenUsage{Input: resp.Usage.PromptTokens, Output: resp.Usage.CompletionTokens, Model: resp.Model, Text: text}}
	for i, tc := range resp.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i+1)
		}
		args := json.RawMessage(tc.Function.Arguments)
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		reply.ToolCalls = append(reply.ToolCalls, reach.Call{ID: id, Tool: tc.Function.Name, Arguments: args})
	}
	return reply, nil
}

// Runtime is what the built-in tools need of the runtime that runs them.
type Runtime interface {
	BeginModel(ctx context.Context, model string) (context.Context, *reach.Frame, error)
	Call(ctx context.Context, c *reach.Call) *reach.Result
	Tool(name string) (reach.Tool, bool)
}

// runModel runs a small agent loop inside a tool's Func: each model call is
// a model frame under the tool's frame (so reach sees the nesting), the
// model is offered the tools named (those the runtime has), the tool calls
// it asks for run through the runtime under that model frame, and their
// results go back to it as tool messages after its own. At most rounds
// model calls.
func runModel(ctx context.Context, rt Runtime, m Model, msgs []openai.Message, names []string, rounds int) (string, error) {
	var tools []reach.Tool
	for _, n := range names {
		if t, ok := rt.Tool(n); ok {
			tools = append(tools, t)
		}
	}
	for range rounds {
		mctx, turn, err := rt.BeginModel(ctx, m.Name())
		if err != nil {
			return "", err
		}
		reply, err := m.Complete(mctx, msgs, tools)
		if err != nil {
			turn.FailModel(err)
			return "", err
		}
		if len(reply.ToolCalls) == 0 {
			turn.EndModel(reply.Usage)
			return reply.Text, nil
		}
		asked := openai.Message{Role: "assistant", Content: reply.Text}
		for _, c := range reply.ToolCalls {
			asked.ToolCalls = append(asked.ToolCalls, openai.ToolCall{ID: c.ID, Type: "function",
				Function: openai.FunctionCall{Name: c.Tool, Arguments: string(c.Arguments)}})
		}
		msgs = append(msgs, asked)
		for _, c := range reply.ToolCalls {
			res := rt.Call(mctx, &c)
			msgs = append(msgs, openai.Message{Role: "tool", ToolCallID: c.ID, Content: res.ModelText()})
		}
		turn.EndModel(reply.Usage)
	}
	return "", fmt.Errorf("the model asked for tools %d times in a row without answering", rounds)
}
