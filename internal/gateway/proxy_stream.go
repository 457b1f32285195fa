package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/agentreach/reach/internal/policy/secrets"
)

// streamMask masks the configured secret values in a streamed answer,
// where the model may spell a secret across several chunks: per choice,
// the content and each tool call's arguments go through a secrets.Stream,
// which holds back the end of a chunk that may begin a secret until the
// next chunk of the same text. A chunk it changes is written anew (its
// members in another order); what is held when a choice finishes goes out
// with that chunk, or in a chunk of its own before [DONE].
type streamMask struct {
	red     *secrets.Redactor
	streams map[string]*secrets.Stream // "<choice>" for content, "<choice>/<tool call index>" for arguments
}

func newStreamMask(red *secrets.Redactor) *streamMask {
	if red == nil || red.Len() == 0 {
		return nil
	}
	return &streamMask{red: red, streams: map[string]*secrets.Stream{}}
}

func (m *streamMask) stream(key string) *secrets.Stream {
	s, ok := m.streams[key]
	if !ok {
		s = m.red.Stream()
		m.streams[key] = s
	}
	return s
}

// chunk returns the data of one event with its texts masked, or d itself
// when nothing changed (or it is not a chunk).
func (m *streamMask) chunk(d []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(d))
	dec.UseNumber()
	var c map[string]any
	if dec.Decode(&c) != nil {
		return d
	}
	choices, _ := c["choices"].([]any)
	changed := false
	for _, ch := range choices {
		choice, _ := ch.(map[string]any)
		if choice == nil {
			continue
		}
		idx := fmt.Sprint(choice["index"])
		delta, _ := choice["delta"].(map[string]any)
		finished := choice["finish_reason"] != nil
		if delta == nil {
			if !finished || !m.holding(idx) {
				continue
			}
			delta = map[string]any{}
			choice["delta"] = delta
		}
		if text, ok := delta["content"].(string); ok || finished {
			s := m.stream(idx)
			out := s.Next(text)
			if finished {
				out += s.Flush()
			}
			if out != text {
				delta["content"], changed = out, true
			}
		}
		calls, _ := delta["tool_calls"].([]any)
		seen := map[string]bool{}
		for _, tc := range calls {
			call, _ := tc.(map[string]any)
			fn, _ := call["function"].(map[string]any)
			if fn == nil {
				continue
			}
			ti := fmt.Sprint(call["index"])
			seen[ti] = true
			args, _ := fn["arguments"].(string)
			s := m.stream(idx + "/" + ti)
			out := s.Next(args)
			if finished {
				out += s.Flush()
			}
			if out != args {
				fn["arguments"], changed = out, true
			}
		}
		if finished { // tool calls whose arguments end with held text
			for _, key := range m.heldArgs(idx) {
				if ti := key[len(idx)+1:]; !seen[ti] {
					n, _ := strconv.Atoi(ti)
					calls = append(calls, map[string]any{"index": n, "function": map[string]any{"arguments": m.streams[key].Flush()}})
					delta["tool_calls"], changed = calls, true
				}
			}
		}
	}
	if !changed {
		return d
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(c) != nil {
		return d
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// holding reports whether any text of choice idx is held back.
func (m *streamMask) holding(idx string) bool {
	if s := m.streams[idx]; s != nil && s.Holding() {
		return true
	}
	return len(m.heldArgs(idx)) > 0
}

// heldArgs returns the keys of choice idx's tool calls whose arguments
// end with held text, in order.
func (m *streamMask) heldArgs(idx string) []string {
	var keys []string
	for k, s := range m.streams {
		if strings.HasPrefix(k, idx+"/") && s.Holding() {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// rest returns the data of a chunk with what is still held (a stream that
// ended with no finish_reason), or nil.
func (m *streamMask) rest() []byte {
	var choices []any
	idxs := map[string]bool{}
	for k := range m.streams {
		idx, _, _ := strings.Cut(k, "/")
		idxs[idx] = true
	}
	for _, idx := range slices.Sorted(maps.Keys(idxs)) {
		if !m.holding(idx) {
			continue
		}
		delta := map[string]any{}
		if s := m.streams[idx]; s != nil && s.Holding() {
			delta["content"] = s.Flush()
		}
		var calls []any
		for _, key := range m.heldArgs(idx) {
			n, _ := strconv.Atoi(key[len(idx)+1:])
			calls = append(calls, map[string]any{"index": n, "function": map[string]any{"arguments": m.streams[key].Flush()}})
		}
		if calls != nil {
			delta["tool_calls"] = calls
		}
		n, _ := strconv.Atoi(idx)
		choices = append(choices, map[string]any{"index": n, "delta": delta})
	}
	if choices == nil {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"object": "chat.completion.chunk", "choices": choices})
	return b
}
