package modelproxy

import (
	"bytes"
	"encoding/json"

	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/redact"
)

// A choice's log probabilities spell its text token by token: a secret
// that the content shows masked is there in pieces ("Pass", "wört",
// "-2024"), and in each token's bytes. The tokens of a choice's content
// (and of its refusal) go through one redact.Stream, as streamed text
// does: the text of a token that may begin a secret is held back and
// passed on with the next token, so a masked secret is written in the
// token that completes it, and the tokens before it are empty. A token so
// changed gets its bytes anew and loses its alternatives (top_logprobs),
// which would show the piece it held.

// tokenStreams are the streams of the log probabilities of each choice's
// texts, by choice and field ("content", "refusal").
type tokenStreams map[streamKey]*redact.Stream

// logprobFields are the members of a choice's logprobs that list tokens.
var logprobFields = []string{"content", "refusal"}

// mask masks the tokens of choice idx's logprobs object lp, and reports
// whether it changed any; end says the choice finishes here, and what its
// streams hold is flushed into lp.
func (ts tokenStreams) mask(red *redact.Redactor, idx int, lp map[string]any, end bool) bool {
	changed := false
	for _, field := range logprobFields {
		key := streamKey{idx, "logprobs." + field}
		arr, _ := lp[field].([]any)
		st := ts[key]
		if st == nil {
			if len(arr) == 0 {
				continue
			}
			st = red.Stream()
			ts[key] = st
		}
		var last map[string]any
		for _, e := range arr {
			el, _ := e.(map[string]any)
			tok, ok := el["token"].(string)
			if !ok {
				continue
			}
			last = el
			text := tokenText(el, tok)
			if out := st.Next(text); out != text {
				setToken(el, out)
				changed = true
			}
		}
		if end && st.Holding() {
			rest := st.Flush()
			if last != nil {
				setToken(last, tokenText(last, last["token"].(string))+rest)
			} else {
				el := map[string]any{"logprob": 0}
				setToken(el, rest)
				lp[field] = append(arr, el)
			}
			changed = true
		}
	}
	return changed
}

// holding reports whether a stream of choice idx holds text back.
func (ts tokenStreams) holding(idx int) bool {
	for k, st := range ts {
		if k.choice == idx && st.Holding() {
			return true
		}
	}
	return false
}

// tokenText is the text a logprobs entry stands for: its bytes, which a
// token that is part of a character's holds whole ("bytes:\xc3" and
// [195]), or else its token.
func tokenText(el map[string]any, tok string) string {
	var b []byte
	switch bs := el["bytes"].(type) {
	case []int: // set by setToken
		for _, x := range bs {
			b = append(b, byte(x))
		}
	case []any:
		for _, x := range bs {
			n, ok := x.(json.Number)
			if !ok {
				return tok
			}
			v, err := n.Int64()
			if err != nil || v < 0 || v > 255 {
				return tok
			}
			b = append(b, byte(v))
		}
	default:
		return tok
	}
	return string(b)
}

// setToken gives a logprobs entry the token text, its bytes, and no
// alternatives.
func setToken(el map[string]any, text string) {
	b := make([]int, len(text))
	for i := range len(text) {
		b[i] = int(text[i])
	}
	el["token"], el["bytes"], el["top_logprobs"] = text, b, []any{}
}

// maskLogprobs masks the tokens of a whole answer's logprobs (b, a chat
// completion); it returns b itself when nothing changed.
func maskLogprobs(red *redact.Redactor, b []byte) []byte {
	if red == nil || red.Len() == 0 || !bytes.Contains(b, []byte(`"logprobs"`)) {
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var c map[string]any
	if dec.Decode(&c) != nil {
		return b
	}
	choices, _ := c["choices"].([]any)
	ts := tokenStreams{}
	changed := false
	for pos, ch := range choices {
		choice, _ := ch.(map[string]any)
		if lp, ok := choice["logprobs"].(map[string]any); ok && ts.mask(red, indexOf(choice, pos), lp, true) {
			changed = true
		}
	}
	if !changed {
		return b
	}
	out, err := httpjson.Marshal(c)
	if err != nil {
		return b
	}
	return out
}

// The Responses API puts an output text's log probabilities beside it, as
// a list ("logprobs": [{token, bytes, logprob, top_logprobs}]): in the
// output_text content part of a message, and in the stream's
// output_text.delta (the delta's tokens) and .done events. Each list is
// masked as the chat's are, as one text.

// maskTokenLists masks each logprobs list of tokens in v (a decoded answer
// or event, as json.Number), each as a whole text, and reports whether it
// changed any.
func maskTokenLists(red *redact.Redactor, v any) bool {
	changed := false
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if arr, ok := x.([]any); ok && k == "logprobs" {
				lp := map[string]any{"content": arr}
				if (tokenStreams{}).mask(red, 0, lp, true) {
					v[k] = lp["content"]
					changed = true
				}
				continue
			}
			if maskTokenLists(red, x) {
				changed = true
			}
		}
	case []any:
		for _, x := range v {
			if maskTokenLists(red, x) {
				changed = true
			}
		}
	}
	return changed
}

// maskResponseLogprobs masks the tokens of the logprobs lists in b, a
// Responses API answer or one of its stream's events; it returns b itself
// when nothing changed.
func maskResponseLogprobs(red *redact.Redactor, b []byte) []byte {
	if red == nil || red.Len() == 0 || !bytes.Contains(b, []byte(`"logprobs"`)) {
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || !maskTokenLists(red, v) {
		return b
	}
	out, err := httpjson.Marshal(v)
	if err != nil {
		return b
	}
	return out
}
