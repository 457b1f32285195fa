package modelproxy

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/redact"
)

// streamMask masks the configured secret values in a streamed answer,
// where the model may spell a secret across several chunks: per choice,
// each text of its delta (content, refusal, reasoning, a transcript, a
// content part's or a tool call's arguments: every string but those that
// name or identify) goes through a secrets.Stream, which holds back the
// end of a chunk that may begin a secret until the next chunk of the same
// text. A chunk it changes is written anew (its members in another
// order); what is held when a choice finishes goes out with that chunk,
// or in a chunk of its own before [DONE].
type streamMask struct {
	red     *redact.Redactor
	streams map[streamKey]*heldText
	tokens  tokenStreams // the choices' logprobs (logprobs.go)
	// idents are the names and ids so far (role, a tool call's id and
	// function name), which the openai Python SDK's stream helper joins
	// when a later chunk repeats them (see ident).
	idents map[streamKey]string
}

// streamKey names one text of a choice by its path in the delta:
// "content", "tool_calls[2].function.arguments" (an array element by its
// index member, else its position).
type streamKey struct {
	choice int
	path   string
}

// heldText is a text's stream and how to put more of it in a delta: the
// path's steps, each a member name or an array element with the members
// that identify it (index, type).
type heldText struct {
	s     *redact.Stream
	steps []step
}

type step struct {
	member string
	elem   map[string]any // for an array element: its index and type members
}

// identifying members name or identify a text rather than carry it.
var identifying = map[string]bool{"role": true, "id": true, "type": true, "name": true, "index": true}

func newStreamMask(red *redact.Redactor) *streamMask {
	if red == nil || red.Len() == 0 {
		return nil
	}
	return &streamMask{red: red, streams: map[streamKey]*heldText{}, tokens: tokenStreams{}, idents: map[streamKey]string{}}
}

// parts is how many texts, names and ids the mask follows.
func (m *streamMask) parts() int {
	if m == nil {
		return 0
	}
	return len(m.streams) + len(m.idents) + len(m.tokens)
}

// held returns the keys of choice's texts that end with held text.
func (m *streamMask) held(choice int) []streamKey {
	var keys []streamKey
	for k, h := range m.streams {
		if k.choice == choice && h.s.Holding() {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b streamKey) int { return strings.Compare(a.path, b.path) })
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
		idx := indexOf(choice, pos)
		// Some servers send "finish_reason": "" (or null) until the end.
		fr, _ := choice["finish_reason"].(string)
		end := fr != ""
		lp, _ := choice["logprobs"].(map[string]any)
		if lp == nil && end && m.tokens.holding(idx) {
			lp = map[string]any{}
			choice["logprobs"] = lp
		}
		if lp != nil && m.tokens.mask(m.red, idx, lp, end) {
			changed = true
		}
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
		for member := range delta {
			if m.walk(&chunkWalk{choice: idx, end: end, seen: seen}, delta, member, position{}) {
				changed = true
			}
		}
	}
	for idx, delta := range ended { // texts of a finished choice that end with held text, absent here
		for _, key := range m.held(idx) {
			if !seen[key] {
				h := m.streams[key]
				put(delta, h.steps, h.s.Flush())
				changed = true
			}
		}
	}
	if !changed {
		return d
	}
	out, err := httpjson.Marshal(c)
	if err != nil {
		return d
	}
	return out
}

// chunkWalk is one choice's walk through a chunk's delta: the choice, its
// finishing here (end), and the texts seen.
type chunkWalk struct {
	choice int
	end    bool
	seen   map[streamKey]bool
}

// position is where a walk is in a delta: its path and the steps that lead
// there.
type position struct {
	path  string
	steps []step
}

// walk masks the texts under parent[member], and reports whether it
// changed any. at leads to parent.
func (m *streamMask) walk(w *chunkWalk, parent map[string]any, member string, at position) bool {
	if identifying[member] {
		if member == "index" || member == "type" {
			return false // replaced, not joined, by every client
		}
		return m.ident(streamKey{w.choice, at.path + "." + member}, parent, member)
	}
	path := at.path + "." + member
	steps := append(slices.Clip(at.steps), step{member: member})
	switch v := parent[member].(type) {
	case string:
		key := streamKey{w.choice, path}
		w.seen[key] = true
		h, ok := m.streams[key]
		if !ok {
			h = &heldText{s: m.red.Stream(), steps: steps}
			m.streams[key] = h
		}
		out := h.s.Next(v)
		if w.end {
			out += h.s.Flush()
		}
		if out != v {
			parent[member] = out
			return true
		}
	case map[string]any:
		changed := false
		for k := range v {
			if m.walk(w, v, k, position{path, steps}) {
				changed = true
			}
		}
		return changed
	case []any:
		changed := false
		for pos, e := range v {
			el, ok := e.(map[string]any)
			if !ok {
				continue
			}
			id := map[string]any{}
			for _, k := range []string{"index", "type"} {
				if x, ok := el[k]; ok {
					id[k] = x
				}
			}
			epath := path + "[" + strconv.Itoa(indexOf(el, pos)) + "]"
			esteps := append(slices.Clip(steps), step{elem: id})
			for k := range el {
				if m.walk(w, el, k, position{epath, esteps}) {
					changed = true
				}
			}
		}
		return changed
	}
	return false
}

// maxIdent bounds the text of a name or id kept to mask its next piece.
const maxIdent = 4 << 10

// ident masks a piece of a name or an id (parent[member], key) that goes
// on one an earlier chunk began: these are not held back (a client other
// than the Python SDK's helper takes a tool call's name from its first
// chunk), but the Python SDK's helper joins the pieces, so a piece whose
// join with what came before spells a secret, where neither does alone,
// is passed on masked whole.
func (m *streamMask) ident(key streamKey, parent map[string]any, member string) bool {
	v, ok := parent[member].(string)
	if !ok || v == "" {
		return false
	}
	before, had := m.idents[key]
	whole := before + v
	if len(whole) > maxIdent {
		whole = whole[len(whole)-maxIdent:]
	}
	m.idents[key] = whole
	if !had {
		return false
	}
	apart := string(m.red.Values([]byte(before))) + string(m.red.Values([]byte(v)))
	if string(m.red.Values([]byte(before+v))) == apart {
		return false
	}
	parent[member] = redact.Mask
	return true
}

// indexOf returns an element's index member, else its position.
func indexOf(el map[string]any, pos int) int {
	if n, ok := el["index"].(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			return int(i)
		}
	}
	return pos
}

// put adds text to delta at the path steps lead to, adding the maps and
// array elements on the way.
func put(delta map[string]any, steps []step, text string) {
	parent := delta
	for i, st := range steps {
		last := i == len(steps)-1
		if st.member == "" {
			continue // an element step follows the member of its array
		}
		if last {
			parent[st.member] = text
			return
		}
		if next := steps[i+1]; next.member == "" { // an array: a new element
			el := maps.Clone(next.elem)
			arr, _ := parent[st.member].([]any)
			parent[st.member] = append(arr, el)
			parent = el
			continue
		}
		child, ok := parent[st.member].(map[string]any)
		if !ok {
			child = map[string]any{}
			parent[st.member] = child
		}
		parent = child
	}
}

// rest returns the data of a chunk with what is still held (a stream that
// ended with no finish_reason), or nil.
func (m *streamMask) rest() []byte {
	choices := map[int]bool{}
	for k, h := range m.streams {
		if h.s.Holding() {
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
			h := m.streams[key]
			put(delta, h.steps, h.s.Flush())
		}
		out = append(out, map[string]any{"index": idx, "delta": delta})
	}
	b, _ := json.Marshal(map[string]any{"object": "chat.completion.chunk", "choices": out})
	return b
}
