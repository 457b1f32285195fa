// Package agent is the reference ReAct agent loop (E8): it asks a model
// (any OpenAI-compatible chat completions endpoint through an
// *openai.Client, or a scripted model for tests and the demo) what to do,
// runs the tool calls it picks through the reach runtime, hands the
// results back, and keeps its history within a budget by folding old tool
// exchanges into a short note.
//
//	a := &agent.Agent{Runtime: rt, Model: agent.Script(turns...)}
//	out, err := a.Run(ctx, "refund order 7") // ctx carries a reach request
package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/agentreach/reach/internal/openai"
)

// Model answers chat completions requests: an *openai.Client, or a
// Scripted model.
type Model interface {
	Complete(ctx context.Context, req *openai.Request) (*openai.Response, error)
}

var _ Model = (*openai.Client)(nil)

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
func (s *Scripted) Complete(_ context.Context, req *openai.Request) (*openai.Response, error) {
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
		return &openai.Response{Message: openai.Message{Role: "assistant", Content: "I have nothing more to do."}, Usage: openai.Usage{PromptTokens: 10}}, nil
	}
	t := s.turns[pick]
	s.pos = pick + 1
	s.calls++
	tokens := t.Tokens
	if tokens == 0 {
		tokens = 100
	}
	msg := openai.Message{Role: "assistant", Content: t.Answer}
	if t.Tool != "" {
		tc := openai.ToolCall{ID: fmt.Sprintf("call_%d", s.calls), Type: "function"}
		tc.Function.Name, tc.Function.Arguments = t.Tool, t.Args
		if tc.Function.Arguments == "" {
			tc.Function.Arguments = "{}"
		}
		msg.ToolCalls = []openai.ToolCall{tc}
		msg.Content = ""
	}
	return &openai.Response{Message: msg, Usage: openai.Usage{PromptTokens: tokens * 9 / 10, CompletionTokens: tokens - tokens*9/10}}, nil
}
