package loops

import (
	"bytes"
	"encoding/json"
)

// An A2A agent answers a message with a task (or a message) in the
// protocol's envelope: the task's id, its context's id, each artifact's
// and message's id are minted for the exchange, new with each send
// whatever the agent said, and a JSON-RPC response carries the request's
// id beside its result. Two tasks that differ only in those are the same
// answer: an agent asked one question again, word for word or reworded,
// that answers the same each time under a new task id learned nothing
// new. The task is known by its shape: an object whose "kind" is "task"
// or "message" beside a "contextId", at the top of a result or as a
// JSON-RPC response's "result". What the agent said (its parts, its
// artifacts' parts, its state) stays.

// A2A shapes a2aShape tells.
const (
	a2aTop     = 1 + iota // the task or message is the result
	a2aWrapped            // it is a JSON-RPC response's "result"
)

// maxA2A is the longest result read as an A2A task.
const maxA2A = 256 << 10

// a2aShape reports whether result b is an A2A task or message (a2aTop),
// or one in a JSON-RPC response (a2aWrapped), or neither (0). It reads b
// only when the words that tell it are in it.
func a2aShape(b []byte) int {
	if len(b) > maxA2A || !bytes.Contains(b, []byte(`"contextId"`)) || !bytes.Contains(b, []byte(`"kind"`)) {
		return 0
	}
	var top a2aObject
	if json.Unmarshal(b, &top) != nil {
		return 0
	}
	shape := a2aTop
	if top.Result != nil {
		if top.JSONRPC == nil {
			return 0
		}
		top, shape = *top.Result, a2aWrapped
	}
	if top.ContextID == nil || top.Kind != "task" && top.Kind != "message" {
		return 0
	}
	return shape
}

// a2aObject is what a2aShape reads of a result: a JSON-RPC response's
// version and result, or a task's or message's kind and context.
type a2aObject struct {
	JSONRPC   *string    `json:"jsonrpc"`
	Result    *a2aObject `json:"result"`
	Kind      string     `json:"kind"`
	ContextID *string    `json:"contextId"`
}

// a2aKey reports whether key k of an A2A task's result names the
// exchange: the ids the protocol mints (contextId, taskId, messageId,
// artifactId) anywhere in it, and "id" in the task's own object or the
// JSON-RPC response's (top, true there).
func a2aKey(k []byte, top bool) bool {
	switch string(k) {
	case "contextId", "taskId", "messageId", "artifactId":
		return true
	case "id":
		return top
	}
	return false
}

// A client sends each A2A message under a new messageId, as the protocol
// asks, whatever it says: in a call's arguments, the messageId of an
// object that is a message (its "role" beside its "parts") names the
// exchange, as a request's id does (exchangeKind), and a read's key leaves
// it out. The same question sent again under a new id is the same call.

// a2aMessageID reports whether key k of arguments args may be an A2A
// message's id: "messageId" in arguments that hold a "role" and "parts",
// as a message does (dropExchange tells which object it is in). A
// messageId beside "parts" alone (a mail tool's message read, its parts
// asked for) names what is read, not the exchange.
func a2aMessageID(k, args []byte) bool {
	return string(k) == "messageId" && bytes.Contains(args, []byte(`"parts"`)) && bytes.Contains(args, []byte(`"role"`))
}

// a2aMessage reports whether decoded object m is an A2A message: a
// "role" beside a list of "parts".
func a2aMessage(m map[string]any) bool {
	_, role := m["role"]
	parts, _ := m["parts"].([]any)
	return role && parts != nil
}
