package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/openai"
)

// Agent is a ReAct loop whose tool calls go through a reach runtime.
type Agent struct {
	Runtime *reach.Runtime
	Model   Model
	// ModelName is sent to the model and names the model frames; if empty, "model".
	ModelName string
	// System is the system prompt; if empty, a short default.
	System string
	// Tools limits the tools offered to the model; if nil, every registered tool.
	Tools []string
	// MaxTurns stops the loop; if zero, 50 (the request's budget usually stops it first).
	MaxTurns int
	// FoldAfter keeps the last FoldAfter tool exchanges verbatim and folds
	// older ones into one summary note; if zero, 8.
	FoldAfter int
}

// Outcome is how a run ended.
type Outcome struct {
	Answer   string   // the model's final answer, if it gave one
	Turns    int      // model turns taken
	Stopped  string   // why the loop ended without an answer, if it did
	Refusals []string // refusals the model received, in order
	Results  []*reach.Result
}

// Run runs the loop for task in the request carried by ctx (see
// reach.Runtime.Begin or Delegate) until the model answers, the runtime
// refuses a turn (budget, stop, loop), or MaxTurns.
func (a *Agent) Run(ctx context.Context, task string) (*Outcome, error) {
	if _, ok := reach.RequestFrom(ctx); !ok {
		return nil, errors.New("agent: ctx carries no reach request")
	}
	name := cmp.Or(a.ModelName, "model")
	sys := cmp.Or(a.System, "You are a careful assistant. Use the tools when they help; when a tool call is refused, read why and change your approach.")
	maxTurns, fold := cmp.Or(a.MaxTurns, 50), cmp.Or(a.FoldAfter, 8)
	tools := a.toolDefs()
	h := &history{system: sys, task: task, keep: fold}
	out := &Outcome{}
	for out.Turns < maxTurns {
		mctx, frame, err := a.Runtime.BeginModel(ctx, name)
		if err != nil {
			out.Stopped = refusalText(err)
			return out, nil
		}
		out.Turns++
		resp, err := a.Model.Complete(mctx, &openai.Request{Model: name, Messages: h.messages(), Tools: tools})
		if err != nil {
			frame.FailModel(err)
			return out, fmt.Errorf("turn %d: %w", out.Turns, err)
		}
		frame.EndModel(reach.TokenUsage{Input: resp.Usage.PromptTokens, Output: resp.Usage.CompletionTokens, Text: resp.Message.Content})
		if len(resp.Message.ToolCalls) == 0 {
			out.Answer = resp.Message.Content
			return out, nil
		}
		h.add(resp.Message)
		for _, tc := range resp.Message.ToolCalls {
			res := a.Runtime.Call(mctx, &reach.Call{ID: tc.ID, Tool: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
			out.Results = append(out.Results, res)
			if res.Status == reach.StatusRefused || res.Status == reach.StatusCancelled {
				out.Refusals = append(out.Refusals, res.ModelText())
			}
			h.add(openai.Message{Role: "tool", ToolCallID: tc.ID, Content: res.ModelText()})
		}
	}
	out.Stopped = fmt.Sprintf("the agent took %d turns without answering", out.Turns)
	return out, nil
}

func refusalText(err error) string {
	var e *reach.Error
	if errors.As(err, &e) {
		return e.ModelText()
	}
	return err.Error()
}

func (a *Agent) toolDefs() []openai.ToolDef {
	var defs []openai.ToolDef
	for _, t := range a.Runtime.Tools() {
		if a.Tools != nil && !contains(a.Tools, t.Name) {
			continue
		}
		var d openai.ToolDef
		d.Type = "function"
		d.Function.Name, d.Function.Description = t.Name, t.Description
		d.Function.Parameters = t.InputSchema
		if len(d.Function.Parameters) == 0 {
			d.Function.Parameters = json.RawMessage(`{"type":"object"}`)
		}
		defs = append(defs, d)
	}
	return defs
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// history is the conversation, with old tool exchanges folded into a note.
type history struct {
	system, task string
	keep         int
	exchanges    [][]openai.Message // each: an assistant message and its tool results
	folded       []string           // one line per folded exchange
}

func (h *history) add(m openai.Message) {
	if m.Role == "assistant" {
		h.exchanges = append(h.exchanges, []openai.Message{m})
	} else if n := len(h.exchanges); n > 0 {
		h.exchanges[n-1] = append(h.exchanges[n-1], m)
	}
	for len(h.exchanges) > h.keep {
		h.folded = append(h.folded, summarize(h.exchanges[0]))
		h.exchanges = h.exchanges[1:]
	}
}

// summarize folds one exchange into a line: the calls and a short result.
func summarize(ex []openai.Message) string {
	var parts []string
	for _, tc := range ex[0].ToolCalls {
		res := ""
		for _, m := range ex[1:] {
			if m.ToolCallID == tc.ID {
				res = m.Content
			}
		}
		res = clip(strings.Join(strings.Fields(res), " "), 80)
		parts = append(parts, fmt.Sprintf("%s(%s) -> %s", tc.Function.Name, clip(tc.Function.Arguments, 60), res))
	}
	return strings.Join(parts, "; ")
}

// clip cuts s to at most n bytes, on a character boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func (h *history) messages() []openai.Message {
	msgs := []openai.Message{{Role: "system", Content: h.system}, {Role: "user", Content: h.task}}
	if len(h.folded) > 0 {
		msgs = append(msgs, openai.Message{Role: "user", Content: "Notes on earlier steps (folded to save context):\n- " + strings.Join(h.folded, "\n- ")})
	}
	for _, ex := range h.exchanges {
		msgs = append(msgs, ex...)
	}
	return msgs
}
