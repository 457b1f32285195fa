package modelproxy

import (
	"encoding/json"
	"slices"
	"strings"
)

// The tool calls a model turn chose, read on the way back to the client, so
// that the MCP calls that run them nest under the turn (link.ModelChoices):
// each call's id as soon as it passes, and its function name and
// arguments once they are complete — when the choice finishes
// (finish_reason), a later call of it begins, or the answer ends — always
// before the client has read them.

// toolChunk is what the proxy reads of the tool calls in a completion or a
// stream's chunk.
type toolChunk struct {
	Choices []struct {
		Index        int      `json:"index"`
		FinishReason *string  `json:"finish_reason"`
		Message      *toolMsg `json:"message"`
		Delta        *toolMsg `json:"delta"`
	} `json:"choices"`
}

type toolMsg struct {
	ToolCalls []struct {
		Index    *int   `json:"index"` // streams only
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// chosenCall is one tool call being read.
type chosenCall struct {
	id, name string
	args     strings.Builder
	done     bool
}

// maxCallName bounds the name of a tool call followed, in bytes (a tool's
// name is at most 128 of them), and callOverhead is what a call counts
// towards toolCalls.held for itself, so that a stream of many empty calls
// is bounded as one of long arguments is.
const (
	maxCallName  = 1024
	callOverhead = 64
)

// toolCalls collects the tool calls of an answer and hands each complete
// one to record.
type toolCalls struct {
	record func(id, name string, args []byte)
	calls  map[[2]int]*chosenCall // (choice index, tool call index)
	// pending are the keys of the calls not yet recorded, in the order
	// they began: a new call records those of its choice, so they are few
	// (a flush that went through every call an answer had named took
	// time in their square: minutes for a stream of 65,536 calls).
	pending [][2]int
	held    int // bytes of calls (callOverhead each), names and arguments held, at most MaxAnswer (a stream's may go on)
}

// add reads the tool calls of one completion or chunk (JSON text).
func (t *toolCalls) add(raw []byte) {
	if t.record == nil || !strings.Contains(string(raw), `"tool_calls"`) && !strings.Contains(string(raw), `"finish_reason"`) {
		return
	}
	var c toolChunk
	if json.Unmarshal(raw, &c) != nil {
		return
	}
	for _, ch := range c.Choices {
		if m := ch.Message; m != nil { // a whole answer: every call is complete
			for _, tc := range m.ToolCalls {
				t.record(tc.ID, tc.Function.Name, []byte(tc.Function.Arguments))
			}
		}
		if d := ch.Delta; d != nil {
			for i, tc := range d.ToolCalls {
				idx := i
				if tc.Index != nil {
					idx = *tc.Index
				}
				key := [2]int{ch.Index, idx}
				cc := t.calls[key]
				if cc == nil && t.held >= MaxAnswer {
					continue // past the bound, a new call is not followed (a stream's may go on)
				}
				if cc == nil {
					t.held += callOverhead
					// A new call: those of the choice before it are complete.
					t.flush(func(k [2]int) bool { return k[0] == ch.Index })
					if t.calls == nil {
						t.calls = map[[2]int]*chosenCall{}
					}
					cc = &chosenCall{}
					t.calls[key] = cc
					t.pending = append(t.pending, key)
				}
				if cc.done && (tc.ID != "" || tc.Function.Name != "" || tc.Function.Arguments != "") {
					// More of a call recorded already (the deltas of two
					// calls interleaved): it is recorded again, whole,
					// when it is complete, as the agent runs it.
					cc.done = false
					t.pending = append(t.pending, key)
				}
				if tc.ID != "" {
					cc.id = tc.ID
				}
				if name := tc.Function.Name; name != "" && len(cc.name) < maxCallName && t.held < MaxAnswer {
					// A name grown a delta at a time, without end, was kept
					// whole (and copied whole at each delta).
					name = name[:min(len(name), maxCallName-len(cc.name), MaxAnswer-t.held)]
					cc.name += name
					t.held += len(name)
				}
				if args := tc.Function.Arguments; t.held < MaxAnswer {
					args = args[:min(len(args), MaxAnswer-t.held)]
					cc.args.WriteString(args)
					t.held += len(args)
				}
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			t.flush(func(k [2]int) bool { return k[0] == ch.Index })
		}
	}
}

// flush records the calls not yet recorded whose key which accepts.
func (t *toolCalls) flush(which func([2]int) bool) {
	var done [][2]int
	t.pending = slices.DeleteFunc(t.pending, func(k [2]int) bool {
		if !which(k) {
			return false
		}
		done = append(done, k)
		return true
	})
	for _, k := range done {
		cc := t.calls[k]
		cc.done = true
		t.record(cc.id, cc.name, []byte(cc.args.String()))
	}
}

// end records every call not yet recorded: the answer is over.
func (t *toolCalls) end() { t.flush(func([2]int) bool { return true }) }
