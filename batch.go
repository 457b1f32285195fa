package reach

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentreach/reach/internal/batch"
	"github.com/agentreach/reach/internal/effects"
	"github.com/agentreach/reach/internal/template"
)

// Envelope is a batch of tool calls for one request (R3):
//
//	{"request_id": "r1", "tool_calls": [{"call_id": "c1", "tool": "get_order", "arguments": {"id": "7"}}]}
//
// An argument value {"$ref": "c1.path.to.field"} is replaced by that part of
// call c1's result data; the call then waits for c1 (R4).
type Envelope struct {
	RequestID string `json:"request_id,omitempty"`
	ToolCalls []Call `json:"tool_calls"`
}

// Response holds one result per call, in the envelope's order.
type Response struct {
	RequestID string    `json:"request_id"`
	Results   []*Result `json:"results"`
}

// The longest call id, idempotency key and reason (Call.Why) a client may
// send, in bytes: an envelope's or an MCP call's _meta with a longer one is
// refused before any call is made. Each is kept whole in the call's frame,
// its audit events and its idempotency record (a reason in its approval
// too), where a call's arguments keep a preview of 16 KiB: an id of
// megabytes made every audit row and page that shows it as large.
const (
	MaxCallID         = 256
	MaxIdempotencyKey = 256
	MaxWhy            = 4096
)

// CheckCallNames returns an error naming what of a call's id, idempotency
// key and reason is longer than it may be, or nil; where says where the
// client put it ("tool_calls[3]: call_id", `_meta["reach/why"]`).
func CheckCallNames(id, key, why string, where func(field string) string) error {
	long := func(field string, n, max int) error {
		return fmt.Errorf("%s is %d bytes long, longer than the %d it may be; nothing ran", where(field), n, max)
	}
	switch {
	case len(id) > MaxCallID:
		return long("call_id", len(id), MaxCallID)
	case len(key) > MaxIdempotencyKey:
		return long("idempotency_key", len(key), MaxIdempotencyKey)
	case len(why) > MaxWhy:
		return long("why", len(why), MaxWhy)
	}
	return nil
}

// DecodeEnvelope decodes and checks an envelope strictly: unknown fields,
// trailing data, missing or duplicate call ids, ids, keys and reasons
// longer than they may be (MaxCallID, MaxIdempotencyKey, MaxWhy) and
// oversized input are errors that say what to fix.
func DecodeEnvelope(data []byte) (*Envelope, error) {
	var env Envelope
	if err := batch.Decode(data, &env, func() int { return len(env.ToolCalls) },
		func(i int) (string, string) { return env.ToolCalls[i].ID, env.ToolCalls[i].Tool }); err != nil {
		return nil, err
	}
	for i, c := range env.ToolCalls {
		if err := CheckCallNames(c.ID, c.IdempotencyKey, c.Why, func(f string) string { return fmt.Sprintf("tool_calls[%d]: %s", i, f) }); err != nil {
			return nil, err
		}
	}
	return &env, nil
}

// Batch runs the envelope's calls in the request carried by ctx: calls that
// are independent run concurrently; a call that references another's result
// waits for it, and writes to the same tool or the same entity run in
// envelope order (R4).
// Results come back in envelope order.
func (rt *Runtime) Batch(ctx context.Context, env *Envelope) *Response {
	resp := &Response{}
	if r, ok := RequestFrom(ctx); ok {
		resp.RequestID = r.id
	}
	calls := make([]batch.Call, len(env.ToolCalls))
	for i, c := range env.ToolCalls {
		bc := batch.Call{ID: c.ID, Args: c.Arguments, Tool: c.Tool}
		if t := rt.lookup(c.Tool); t != nil && t.Access.Writes() {
			bc.Write = true
			if eff := t.Effects; eff != nil && len(eff.Writes) > 0 {
				if len(batch.Refs(c.Arguments)) > 0 {
					bc.AnyEntity = true
				} else if names, err := effects.Names(eff.Writes, template.NewScope(c.Arguments, nil)); err == nil {
					bc.Entities = names
				}
			}
		}
		calls[i] = bc
	}
	resp.Results = batch.Execute(ctx, calls, func(ctx context.Context, i int, args json.RawMessage) *Result {
		c := env.ToolCalls[i]
		c.Arguments = args
		return rt.Call(ctx, &c)
	})
	return resp
}
