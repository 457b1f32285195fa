package reach

import (
	"context"
	"encoding/json"

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

// DecodeEnvelope decodes and checks an envelope strictly: unknown fields,
// trailing data, missing or duplicate call ids and oversized input are
// errors that say what to fix.
func DecodeEnvelope(data []byte) (*Envelope, error) {
	var env Envelope
	if err := batch.Decode(data, &env, func() int { return len(env.ToolCalls) },
		func(i int) (string, string) { return env.ToolCalls[i].ID, env.ToolCalls[i].Tool }); err != nil {
		return nil, err
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
