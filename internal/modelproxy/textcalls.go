package modelproxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/openai"
)

// Tool calls written into a model's text. Some agents (KaibanJS's, the
// ReAct JSON agents of LangChain) give the model no tools through the API:
// their prompt asks the model to answer with a JSON object that names a
// tool and its arguments ({"thought", "action", "actionInput"}), and the
// agent calls the tool the text names, over MCP, with those arguments.
// Reach reads such an answer as it reads an API tool call (choices.go),
// within bounds that keep a link sound — a call linked to the wrong turn
// would be charged to, or stopped with, another agent's request:
//
//   - only a chat turn that offered the model no tools (no "tools", no
//     "functions"): a client that offers tools runs the API's tool calls,
//     not its model's text;
//   - only an answer that chose no tool call of the API, and whose text is
//     one JSON object, bare or in the one fenced code block of the text:
//     an answer that quotes several, or prose that mentions one in
//     passing, chooses nothing;
//   - only an object with one pair of a tool's name (a string) and its
//     arguments (a JSON object), by the names ReAct prompts use;
//
// and then the choice links only as an API tool call's does (link.Match):
// an MCP call of that tool with exactly those arguments (canonical JSON),
// from the same principal, within link.ChoiceWindow, and never when turns
// of several running requests chose it. The choice has no id of the API:
// the MCP call keeps none (the id is what a retry of the same call is
// known by, and a model in a loop writes the same block every turn).
//
// The next turn of the run sends the block back in its history, as the
// assistant's message: that turn continues the request of the turn that
// wrote it (link.ModelChoices.Continued), by a key of the block's
// canonical JSON (thought included), which the client may re-serialize.

// maxTextAction bounds the text read for a written tool call: a ReAct
// block is some hundred bytes; a longer answer is prose, or a final answer.
const maxTextAction = 64 << 10

// textActionPairs are the members that name a tool and hold its arguments
// in the JSON of ReAct prompts: KaibanJS's and LangChain's JSON agents'
// (action, actionInput or action_input), and the {"tool", ...} and
// {"name", "arguments"} forms models are asked for elsewhere.
var textActionPairs = [...]struct{ name, args string }{
	{"action", "actionInput"}, {"action", "action_input"},
	{"tool", "tool_input"}, {"tool", "args"}, {"tool", "arguments"}, {"tool", "input"},
	{"name", "arguments"}, {"name", "parameters"},
}

// textAction reads the tool call a model's answer text writes: the tool's
// name, its arguments (a JSON object) and the key of the whole block (for
// the next turn's history), or false when the text writes none, or more
// than one, or one that is not sound to read (see above).
func textAction(text string) (name string, args json.RawMessage, key string, ok bool) {
	s := strings.TrimSpace(text)
	if len(s) < 2 || len(s) > maxTextAction {
		return "", nil, "", false
	}
	if s[0] != '{' {
		block, found := fencedBlock(s)
		if !found {
			return "", nil, "", false
		}
		s = block
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var obj map[string]json.RawMessage
	if dec.Decode(&obj) != nil || obj == nil {
		return "", nil, "", false
	}
	if strings.TrimSpace(s[dec.InputOffset():]) != "" { // more after the object: not one block
		return "", nil, "", false
	}
	found := 0
	for _, p := range textActionPairs {
		n, a := obj[p.name], obj[p.args]
		if n == nil || a == nil {
			continue
		}
		var tool string
		if json.Unmarshal(n, &tool) != nil || tool == "" || strings.ContainsAny(tool, " \t\r\n") {
			return "", nil, "", false
		}
		if a = bytes.TrimSpace(a); len(a) == 0 || a[0] != '{' {
			return "", nil, "", false
		}
		name, args = tool, a
		found++
	}
	if found != 1 {
		return "", nil, "", false
	}
	if _, ok := link.ArgsKey(args); !ok {
		return "", nil, "", false
	}
	canon, err := callgraph.Normalize(nil, []byte(s))
	if err != nil {
		return "", nil, "", false
	}
	sum := sha256.Sum256(canon)
	return name, args, "text_" + hex.EncodeToString(sum[:16]), true
}

// fencedBlock returns the content of the one fenced code block of s
// (```json … ```, or ``` … ```) when it holds a JSON object; false when s
// has none, or several.
func fencedBlock(s string) (string, bool) {
	if strings.Count(s, "```") != 2 {
		return "", false
	}
	_, rest, _ := strings.Cut(s, "```")
	block, _, _ := strings.Cut(rest, "```")
	info, body, ok := strings.Cut(block, "\n")
	if !ok {
		return "", false
	}
	if info = strings.TrimSpace(info); info != "" && !strings.EqualFold(info, "json") {
		return "", false
	}
	body = strings.TrimSpace(body)
	if len(body) < 2 || body[0] != '{' {
		return "", false
	}
	return body, true
}

// offersTools reports whether a chat turn's body offers the model tools of
// the API (tools, or the older functions), whose calls the client runs.
func offersTools(body map[string]json.RawMessage) bool {
	for _, k := range []string{"tools", "functions"} {
		if v := bytes.TrimSpace(body[k]); len(v) > 0 && !bytes.Equal(v, []byte("null")) && !bytes.Equal(v, []byte("[]")) {
			return true
		}
	}
	return false
}

// textHistoryKey returns the key of the tool call an assistant message's
// content (a string, or text parts) writes, for historyIDs; "" if none.
func textHistoryKey(content json.RawMessage) string {
	c := bytes.TrimSpace(content)
	if len(c) == 0 || !bytes.Contains(c, []byte("{")) {
		return ""
	}
	var text string
	if json.Unmarshal(c, &text) != nil {
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(c, &parts) != nil {
			return ""
		}
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		text = b.String()
	}
	if _, _, key, ok := textAction(text); ok {
		return key
	}
	return ""
}

// wroteText hands the answer's text to wrote, once, when it is over and
// chose no tool call of the API (a chat turn that offered no tools).
func (a *answer) wroteText() {
	if f := a.wrote; f != nil && !a.calledAPI {
		a.wrote = nil
		f(a.text.String())
	}
}

// choicesEnded notes the choices of a stream's chunk, and reports whether
// the chunk ended one and every choice read so far has ended: the answer's
// text is whole, and its client may act on it.
func (a *answer) choicesEnded(chs []openai.Choice) bool {
	if len(chs) == 0 {
		return false
	}
	if a.finished == nil {
		a.finished = map[int]bool{}
	}
	ends := false
	for _, ch := range chs {
		done, seen := a.finished[ch.Index]
		switch {
		case ch.FinishReason != "":
			ends = true
			if !done {
				a.finished[ch.Index] = true
				if seen {
					a.open--
				}
			}
		case !seen:
			a.finished[ch.Index] = false
			a.open++
		}
	}
	// A count, not a walk of every choice read on each chunk that ends
	// one: a stream of one choice never ended and many chunks each ending
	// a new one costs no more than one walk of them.
	return ends && a.open == 0
}
