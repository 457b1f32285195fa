package gateway

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"slices"

	"github.com/agentreach/reach/internal/policy/secrets"
)

// streamMask masks the configured secret values in a streamed answer,
// where the model may spell a secret across several chunks: per choice,
// each text of its delta (content, refusal, reasoning, a function call's
// or each tool call's arguments) goes through a secrets.Stream, which
// holds back the end of a chunk that may begin a secret until the next
// chunk of the same text. A chunk it changes is written anew (its members
// in another order); what is held when a choice finishes goes out with
// that chunk, or in a chunk of its own before [DONE].
type streamMask struct {
	red     *secrets.Redactor
	streams map[streamKey]*secrets.Stream
}

// streamKey names one text of a choice: a delta member ("content",
// "refusal", "function_call" for its arguments), or a tool call's
// arguments (tool >= 0).
type streamKey struct {
	choice int
	field  string
	tool   int
}

func newStreamMask(red *secrets.Redactor) *streamMask {
	if red == nil || red.Len() == 0 {
		return nil
	}
	return &streamMask{red: red, streams: map[streamKey]*secrets.Stream{}}
}

// next passes text of key through its stream, flushing it at the end.
func (m *streamMask) next(key streamKey, text string, end bool) string {
	s, ok := m.streams[key]
	if !ok {
		s = m.red.Stream()
		m.streams[key] = s
	}
	out := s.Next(text)
	if end {
		out += s.Flush()
	}
	return out
}

// held returns the keys of choice's texts that end with held text.
func (m *streamMask) held(choice int) []streamKey {
	var keys []streamKey
	for k, s := range m.streams {
		if k.choice == choice && s.Holding() {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b streamKey) int { return cmp.Or(cmp.Compare(a.field, b.field), cmp.Compare(a.tool, b.tool)) })
	return keys
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
	seen := map[streamKey]bool{}
	ended := map[int]map[string]any{} // the deltas of the choices that finish here
	for pos, ch := range choices {
		choice, _ := ch.(map[string]any)
		if choice == nil {
			continue
		}
		idx := pos
		if n, ok := choice["index"].(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				idx = int(i)
			}
		}
		end := choice["finish_reason"] != nil
		delta, _ := choice["delta"].(map[string]any)
		if delta == nil {
			if !end || len(m.held(idx)) == 0 {
				continue
			}
			delta = map[string]any{}
			choice["delta"] = delta
		}
		if end {
			ended[idx] = delta
		}
		for field, v := range delta {
			switch v := v.(type) {
			case string:
				if field == "role" {
					continue
				}
				key := streamKey{idx, field, -1}
				seen[key] = true
				if out := m.next(key, v, end); out != v {
					delta[field], changed = out, true
				}
			case map[string]any: // function_call
				if args, ok := v["arguments"].(string); ok {
					key := streamKey{idx, field, -1}
					seen[key] = true
					if out := m.next(key, args, end); out != args {
						v["arguments"], changed = out, true
					}
				}
			case []any: // tool_calls
				for pos, tc := range v {
					call, _ := tc.(map[string]any)
					fn, _ := call["function"].(map[string]any)
					args, ok := fn["arguments"].(string)
					if !ok {
						continue
					}
					ti := pos
					if n, ok := call["index"].(json.Number); ok {
						if i, err := n.Int64(); err == nil {
							ti = int(i)
						}
					}
					key := streamKey{idx, field, ti}
					seen[key] = true
					if out := m.next(key, args, end); out != args {
						fn["arguments"], changed = out, true
					}
				}
			}
		}
	}
	for idx, delta := range ended { // texts of a finished choice that end with held text, absent here
		for _, key := range m.held(idx) {
			if !seen[key] {
				m.put(delta, key, m.next(key, "", true))
				changed = true
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

// put adds text to the member of delta that key names.
func (m *streamMask) put(delta map[string]any, key streamKey, text string) {
	switch {
	case key.tool >= 0:
		calls, _ := delta[key.field].([]any)
		delta[key.field] = append(calls, map[string]any{"index": key.tool, "function": map[string]any{"arguments": text}})
	case key.field == "function_call":
		delta[key.field] = map[string]any{"arguments": text}
	default:
		delta[key.field] = text
	}
}

// rest returns the data of a chunk with what is still held (a stream that
// ended with no finish_reason), or nil.
func (m *streamMask) rest() []byte {
	choices := map[int]bool{}
	for k, s := range m.streams {
		if s.Holding() {
			choices[k.choice] = true
		}
	}
	if len(choices) == 0 {
		return nil
	}
	var out []any
	for _, idx := range slices.Sorted(maps.Keys(choices)) {
		delta := map[string]any{}
		for _, key := range m.held(idx) {
			m.put(delta, key, m.next(key, "", true))
		}
		out = append(out, map[string]any{"index": idx, "delta": delta})
	}
	b, _ := json.Marshal(map[string]any{"object": "chat.completion.chunk", "choices": out})
	return b
}
