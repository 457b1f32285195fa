package loops

import (
	"bytes"
	"encoding/json"
)

// A model's answer comes in an envelope of the exchange: an OpenAI-style
// chat completion's id, creation time, token counts and system
// fingerprint, an Anthropic-style message's id and usage, are new with each
// call whatever the model answered. Two completions that differ only in
// those are the same answer: a judge asked again under reworded prompts
// that grades one unchanged text alike, a RAG answer that says again that
// the passages do not say, learned nothing new. The envelope is known by
// its shape, at the top of a result: a "usage" object beside a "choices"
// list (a chat or text completion), or beside "stop_reason" and a "role"
// (a message). Its "object" names the envelope and its "model" echoes
// the model asked for (a label's classifier would otherwise share the
// model's name with each asking, and read as answering about it). What
// the model said (the choices, the content) and why it stopped stay.

// maxEnvelope is the longest answer read as a model's envelope.
const maxEnvelope = 64 << 10

// envelopeKeys are the members of a model's answer that belong to its
// exchange.
var envelopeKeys = map[string]bool{
	"id": true, "object": true, "created": true, "created_at": true, "model": true, "usage": true, "system_fingerprint": true,
}

func envelopeKey(k []byte) bool { return envelopeKeys[string(k)] }

// A model asked through a tool of the agent's own often hands back less
// than the envelope: its reply in words beside the call's token counts
// ({"answer": ..., "usage": {"prompt_tokens": 20, "completion_tokens":
// 31}}). The prompt's length, reworded, moves those counts whatever the
// model said: the counts belong to the exchange, the reply is the answer.
// Such a "usage" is an object of token counts alone (each member's key
// ending in "tokens", its value a number), beside a member that is a
// text of three words or more. An account's usage report (the tokens an
// organisation used, beside its name) has no reply beside its counts:
// they are its answer. So are a polled job's: a job polled the same way
// each time ({"job": "j-41"}, or one question asked again word for word)
// says "still working" while its counts grow, the one sign that it moves.
// The counts are kept, then, in the digest and the leaves every rule
// reads, marked (leaf.exch) when the call asked in free text (Step.prose);
// only the rephrase rule, whose rewordings move them whatever the reply,
// compares without them (Detector.doneTool).

// Envelopes modelEnvelope tells: a model's answer in its full envelope,
// or a reply beside its token counts (usageReply).
const (
	fullEnvelope = 1 + iota
	usageReply
)

// modelEnvelope reports whether result b, an object, is a model's answer
// in its envelope (fullEnvelope), or a reply beside the call's token
// counts (usageReply), or neither (0). It reads b only when the words
// that tell them are in it.
func modelEnvelope(b []byte) int {
	if len(b) > maxEnvelope || !bytes.Contains(b, []byte(`"usage"`)) {
		return 0
	}
	full := bytes.Contains(b, []byte(`"choices"`)) || bytes.Contains(b, []byte(`"stop_reason"`))
	if !full && !bytes.Contains(b, []byte(`tokens"`)) {
		return 0
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return 0
	}
	u := bytes.TrimSpace(top["usage"])
	if len(u) == 0 || u[0] != '{' {
		return 0
	}
	if !full {
		if tokenCounts(u) && replyBeside(top) {
			return usageReply
		}
		return 0
	}
	if c := bytes.TrimSpace(top["choices"]); len(c) > 0 && c[0] == '[' {
		return fullEnvelope
	}
	_, role := top["role"]
	_, stop := top["stop_reason"]
	if role && stop {
		return fullEnvelope
	}
	return 0
}

// tokenCounts reports whether object u holds token counts alone: one
// member or more, each under a key whose last word is "tokens", each a
// number.
func tokenCounts(u []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(u, &m) != nil || len(m) == 0 {
		return false
	}
	for k, v := range m {
		var w keyWords
		if string(w.last([]byte(k))) != "tokens" {
			return false
		}
		if v = bytes.TrimSpace(v); len(v) == 0 || !numeric(v) {
			return false
		}
	}
	return true
}

// replyBeside reports whether a member of top other than its usage is a
// text of three words or more: a reply in words.
func replyBeside(top map[string]json.RawMessage) bool {
	for k, v := range top {
		if k == "usage" {
			continue
		}
		var t string
		if v = bytes.TrimSpace(v); len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &t) != nil {
			continue
		}
		if wordsOfText(t) >= 3 {
			return true
		}
	}
	return false
}

// wordsOfText counts the words of t that hold a letter, and returns 0
// unless half of t's bytes but its spaces are letters: a reply may say
// "7%" or "(2019)", a token or an id is no text of words.
func wordsOfText(t string) int {
	words, letters, other := 0, 0, 0
	inWord, hasLetter := false, false
	for _, r := range t {
		switch {
		case r == ' ' || r == '\t' || r == '\n':
			if inWord && hasLetter {
				words++
			}
			inWord, hasLetter = false, false
			continue
		case isLetter(r):
			letters++
			hasLetter = true
		default:
			other++
		}
		inWord = true
	}
	if inWord && hasLetter {
		words++
	}
	if letters < other {
		return 0
	}
	return words
}

// A tool's output comes back, through some frameworks, in the envelope of
// the call that asked for it: the Responses API's {"type":
// "function_call_output", "call_id": ..., "output": ...}, a LangChain tool
// message's {"type": "tool", "tool_call_id": ..., "content": ...}, an
// Anthropic tool_result's {"type": "tool_result", "tool_use_id": ...,
// "content": ...}. The call's id is new with each call, whatever the tool
// answered; the output is the answer.

// toolEnvelopeKeys are the members a tool output's envelope may hold.
var toolEnvelopeKeys = map[string]bool{
	"type": true, "call_id": true, "tool_call_id": true, "tool_use_id": true, "id": true,
	"name": true, "status": true, "output": true, "content": true,
}

// toolEnvelope returns the output that result b, an object, holds in a
// tool output's envelope (above), or nil. It reads b only when it names a
// call's id.
func toolEnvelope(b []byte) json.RawMessage {
	if len(b) > maxEnvelope || len(b) == 0 || b[0] != '{' || !bytes.Contains(b, []byte(`"type"`)) ||
		!bytes.Contains(b, []byte(`"call_id"`)) && !bytes.Contains(b, []byte(`"tool_call_id"`)) && !bytes.Contains(b, []byte(`"tool_use_id"`)) {
		return nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return nil
	}
	var typ string
	if json.Unmarshal(top["type"], &typ) != nil {
		return nil
	}
	switch typ {
	case "function_call_output", "tool", "tool_result":
	default:
		return nil
	}
	ids := 0
	for k := range top {
		if !toolEnvelopeKeys[k] {
			return nil
		}
		if k == "call_id" || k == "tool_call_id" || k == "tool_use_id" {
			ids++
		}
	}
	out, ok := top["output"]
	if c, has := top["content"]; has {
		if ok {
			return nil
		}
		out, ok = c, true
	}
	if ids != 1 || !ok {
		return nil
	}
	return bytes.TrimSpace(out)
}
