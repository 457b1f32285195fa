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

// modelEnvelope reports whether result b, an object, is a model's answer
// in its envelope (above). It reads b only when both words are in it.
func modelEnvelope(b []byte) bool {
	if len(b) > maxEnvelope || !bytes.Contains(b, []byte(`"usage"`)) ||
		!bytes.Contains(b, []byte(`"choices"`)) && !bytes.Contains(b, []byte(`"stop_reason"`)) {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return false
	}
	u := bytes.TrimSpace(top["usage"])
	if len(u) == 0 || u[0] != '{' {
		return false
	}
	if c := bytes.TrimSpace(top["choices"]); len(c) > 0 && c[0] == '[' {
		return true
	}
	_, role := top["role"]
	_, stop := top["stop_reason"]
	return role && stop
}
