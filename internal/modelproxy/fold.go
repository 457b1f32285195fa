package modelproxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/openai"
)

// The context watermark (model.context): a conversation that has gone on
// for more than fold_after_turns model turns, or whose prompt passes window
// tokens, has its older tool results folded — each replaced by its
// one-line summary (the one reach's shaping made of the result, when reach
// ran the call) — while the last keep_last turns stay whole. A system note
// tells the model what was folded and how to get it back, and the turn's
// audit event (its why) records the folded calls.

// defaultKeepLast is how many turns stay whole when keep_last is not set.
const defaultKeepLast = 2

// foldedPrefix begins a folded tool result.
const foldedPrefix = "[folded by Agent-Reach] "

// historyMsg is what folding reads of a chat message.
type historyMsg struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
}

// folded is one tool result that was folded.
type folded struct {
	id, tool, summary string
}

// fold folds the history of a chat request (its decoded body) as ctx says,
// in place, looking the calls up in req's tree. It returns what it folded.
func fold(body map[string]json.RawMessage, ctx *config.ModelContext, req *reach.Request) []folded {
	if ctx == nil || ctx.Window <= 0 && ctx.FoldAfterTurns <= 0 {
		return nil
	}
	var raw []json.RawMessage
	if json.Unmarshal(body["messages"], &raw) != nil {
		return nil
	}
	msgs := make([]historyMsg, len(raw))
	turns := 0
	for i, m := range raw {
		json.Unmarshal(m, &msgs[i])
		if msgs[i].Role == "assistant" {
			turns++
		}
	}
	prompt := openai.EstimateTokens(len(body["messages"]))
	if !(ctx.FoldAfterTurns > 0 && turns > ctx.FoldAfterTurns) && !(ctx.Window > 0 && prompt > ctx.Window) {
		return nil
	}
	keep := ctx.KeepLast
	if keep <= 0 {
		keep = defaultKeepLast
	}
	// Everything from the keep-th last assistant message on stays whole.
	keepFrom := len(msgs)
	for i, seen := len(msgs)-1, 0; i >= 0 && seen < keep; i-- {
		if msgs[i].Role == "assistant" {
			seen++
			keepFrom = i
		}
	}
	frames := callFrames(req)
	var out []folded
	for i := range keepFrom {
		m := msgs[i]
		if m.Role != "tool" {
			continue
		}
		text := contentText(m.Content)
		if strings.HasPrefix(text, foldedPrefix) {
			continue // folded on an earlier turn, as the client sent it back
		}
		f := folded{id: m.ToolCallID, tool: m.Name}
		if fr := frames[m.ToolCallID]; fr != nil {
			f.tool, f.summary = fr.Name, fr.Summary()
		}
		if f.summary == "" {
			f.summary = oneLine(text, 100)
		}
		line := foldedPrefix + f.summary
		if len(line) >= len(text) {
			continue // nothing to gain
		}
		var obj map[string]json.RawMessage
		json.Unmarshal(raw[i], &obj)
		obj["content"], _ = json.Marshal(line)
		raw[i], _ = json.Marshal(obj)
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil
	}
	raw = append(raw, foldNote(out, prompt, ctx))
	body["messages"], _ = json.Marshal(raw)
	return out
}

// foldNote is the system message that says what was folded.
func foldNote(fs []folded, prompt int64, ctx *config.ModelContext) json.RawMessage {
	var b strings.Builder
	fmt.Fprintf(&b, "Agent-Reach folded %d earlier tool results of this conversation to one-line summaries (marked %q), "+
		"to keep it within its context", len(fs), strings.TrimSpace(foldedPrefix))
	if ctx.Window > 0 {
		fmt.Fprintf(&b, " (about %d tokens of a %d-token window)", prompt, ctx.Window)
	}
	b.WriteString(": ")
	for i, f := range fs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.id)
		if f.tool != "" {
			b.WriteString(" (" + f.tool + ")")
		}
	}
	b.WriteString(". If you need one of them in full, call its tool again with the same arguments.")
	m, _ := json.Marshal(map[string]string{"role": "system", "content": b.String()})
	return m
}

// foldWhy is the folded calls as the turn's audit event records them.
func foldWhy(fs []folded) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.id + " " + f.tool + ": " + f.summary
	}
	return fmt.Sprintf("folded %d tool results to their summaries: %s", len(fs), strings.Join(parts, "; "))
}

// callFrames indexes the tool calls of req's tree by the id they went by
// (the model's tool call id).
func callFrames(req *reach.Request) map[string]*reach.Frame {
	out := map[string]*reach.Frame{}
	if req == nil {
		return out
	}
	var walk func(r *reach.Request)
	walk = func(r *reach.Request) {
		for _, f := range r.Frames() {
			if f.Kind == reach.ToolFrame && f.CallID != "" {
				out[f.CallID] = f
			}
		}
		for _, c := range r.Children() {
			walk(c)
		}
	}
	walk(req.Root())
	return out
}

// contentText is a message's content as text: a string, or the texts of
// its parts.
func contentText(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(c, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// oneLine is s on one line, at most n bytes (cut at a rune, with "…").
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
