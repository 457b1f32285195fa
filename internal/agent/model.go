// Package agent is the reference ReAct agent loop (E8): it asks a model
// (any OpenAI-compatible chat completions endpoint, or a scripted model for
// tests and the demo) what to do, runs the tool calls it picks through the
// reach runtime, hands the results back, and keeps its history within a
// budget by folding old tool exchanges into a short note.
//
//	a := &agent.Agent{Runtime: rt, Model: agent.Script(turns...)}
//	out, err := a.Run(ctx, "refund order 7") // ctx carries a reach request
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Message is one chat message in the OpenAI format.
type Message struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a function call the model chose.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"` // "function"
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"` // JSON text
	} `json:"function"`
}

// ToolDef is a function the model may call.
type ToolDef struct {
	Type     string `json:"type"` // "function"
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// Request is a chat completions request.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []ToolDef `json:"tools,omitempty"`
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// Response is a chat completions response (the first choice only).
type Response struct {
	Message Message
	Usage   Usage
}

// Model answers chat completions requests.
type Model interface {
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// OpenAI is a client for any OpenAI-compatible /chat/completions endpoint.
// The zero value is not usable: set BaseURL (e.g. http://127.0.0.1:8000/v1).
type OpenAI struct {
	BaseURL string
	APIKey  string
	Client  *http.Client // if nil, a client with a 2-minute timeout
	Header  http.Header  // extra headers, e.g. traceparent for nesting
}

// Complete implements Model.
func (o *OpenAI) Complete(ctx context.Context, req *Request) (*Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(o.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	if o.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	for k, vs := range o.Header {
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	c := o.Client
	if c == nil {
		c = &http.Client{Timeout: 2 * time.Minute}
	}
	resp, err := c.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("calling the model: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the model's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the model answered %s: %s", resp.Status, strings.TrimSpace(string(data)))
	}
	var out struct {
		Choices []struct {
			Message Message `json:"message"`
		} `json:"choices"`
		Usage Usage `json:"usage"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("decoding the model's answer: %w", err)
	}
	if len(out.Choices) == 0 {
		return nil, fmt.Errorf("the model's answer has no choices")
	}
	return &Response{Message: out.Choices[0].Message, Usage: out.Usage}, nil
}

// Turn is one step of a scripted model: a tool call or an answer. If When
// is set, the turn is taken only when the last observation (the content of
// the last tool message) contains it; turns are otherwise taken in order.
type Turn struct {
	When   string // substring of the last observation that selects this turn
	Tool   string // a tool call ...
	Args   string // ... with these JSON arguments
	Answer string // or a final answer
	Tokens int64  // tokens charged for this turn; if zero, 100
	Repeat int    // take this turn this many times (0 or 1: once)
}

// Scripted is a deterministic model for tests and the demo. Safe for
// concurrent use; each Complete takes the next matching turn.
type Scripted struct {
	mu    sync.Mutex
	turns []Turn
	pos   int
	calls int
}

// Script returns a scripted model that plays turns.
func Script(turns ...Turn) *Scripted {
	var expanded []Turn
	for _, t := range turns {
		for range max(t.Repeat, 1) {
			expanded = append(expanded, t)
		}
	}
	return &Scripted{turns: expanded}
}

// Complete implements Model.
func (s *Scripted) Complete(_ context.Context, req *Request) (*Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "tool" {
			last = req.Messages[i].Content
			break
		}
	}
	// A turn whose When matches the last observation wins; otherwise the
	// next unconditional turn.
	pick := -1
	for i := s.pos; i < len(s.turns); i++ {
		if w := s.turns[i].When; w != "" && strings.Contains(last, w) {
			pick = i
			break
		}
	}
	if pick < 0 {
		for i := s.pos; i < len(s.turns); i++ {
			if s.turns[i].When == "" {
				pick = i
				break
			}
		}
	}
	if pick < 0 {
		return &Response{Message: Message{Role: "assistant", Content: "I have nothing more to do."}, Usage: Usage{PromptTokens: 10}}, nil
	}
	t := s.turns[pick]
	s.pos = pick + 1
	s.calls++
	tokens := t.Tokens
	if tokens == 0 {
		tokens = 100
	}
	msg := Message{Role: "assistant", Content: t.Answer}
	if t.Tool != "" {
		tc := ToolCall{ID: fmt.Sprintf("call_%d", s.calls), Type: "function"}
		tc.Function.Name, tc.Function.Arguments = t.Tool, t.Args
		if tc.Function.Arguments == "" {
			tc.Function.Arguments = "{}"
		}
		msg.ToolCalls = []ToolCall{tc}
		msg.Content = ""
	}
	return &Response{Message: msg, Usage: Usage{PromptTokens: tokens * 9 / 10, CompletionTokens: tokens - tokens*9/10}}, nil
}
