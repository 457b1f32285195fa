package reach

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// Limits on a decoded envelope.
const (
	MaxEnvelopeBytes = 4 << 20
	MaxBatchCalls    = 256
)

// DecodeEnvelope decodes and checks an envelope strictly: unknown fields,
// trailing data, missing or duplicate call ids and oversized input are
// errors that say what to fix.
func DecodeEnvelope(data []byte) (*Envelope, error) {
	if len(data) > MaxEnvelopeBytes {
		return nil, fmt.Errorf("envelope is %d bytes; the limit is %d", len(data), MaxEnvelopeBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var env Envelope
	if err := dec.Decode(&env); err != nil {
		return nil, fmt.Errorf("decoding envelope: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decoding envelope: unexpected data after the JSON object")
	}
	if len(env.ToolCalls) == 0 {
		return nil, errors.New(`envelope has no tool_calls: send {"tool_calls": [{"call_id": ..., "tool": ..., "arguments": {...}}]}`)
	}
	if len(env.ToolCalls) > MaxBatchCalls {
		return nil, fmt.Errorf("envelope has %d tool calls; the limit is %d", len(env.ToolCalls), MaxBatchCalls)
	}
	seen := make(map[string]bool, len(env.ToolCalls))
	for i, c := range env.ToolCalls {
		switch {
		case c.ID == "":
			return nil, fmt.Errorf("tool_calls[%d]: call_id is required", i)
		case seen[c.ID]:
			return nil, fmt.Errorf("tool_calls[%d]: call_id %q is used twice", i, c.ID)
		case c.Tool == "":
			return nil, fmt.Errorf("tool_calls[%d] (%s): tool is required", i, c.ID)
		}
		seen[c.ID] = true
	}
	return &env, nil
}

// Batch runs the envelope's calls in the request carried by ctx: calls that
// are independent run concurrently; a call that references another's result
// waits for it, and writes to the same tool or the same entity run in
// envelope order (R4).
// Results come back in envelope order.
func (rt *Runtime) Batch(ctx context.Context, env *Envelope) *Response {
	n := len(env.ToolCalls)
	resp := &Response{Results: make([]*Result, n)}
	if r, ok := RequestFrom(ctx); ok {
		resp.RequestID = r.id
	}
	index := make(map[string]int, n)
	calls := make([]batch.Call, n)
	for i, c := range env.ToolCalls {
		index[c.ID] = i
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
	order := batch.Plan(calls)
	for _, i := range order.Cycle {
		resp.Results[i] = &Result{CallID: env.ToolCalls[i].ID, Status: StatusRefused,
			Error: refuse("batch", TypeInvalidArgs, "ref_cycle",
				"The calls' $ref arguments depend on each other in a cycle.",
				"Split the batch: call the independent calls first, then the ones that use their results.")}
	}
	skip := func(i int) bool { return resp.Results[i] != nil }
	batch.Run(ctx, order.Deps, skip, func(ctx context.Context, i int) {
		c := env.ToolCalls[i]
		args, e := batch.Substitute(c.Arguments, func(id string) (batch.Result, bool) {
			j, ok := index[id]
			if !ok || j == i {
				return batch.Result{}, false
			}
			if r := resp.Results[j]; r != nil && r.Status == StatusSuccess {
				return batch.Result{Data: r.Data, Succeeded: true}, true
			}
			return batch.Result{}, true
		})
		if e != nil {
			resp.Results[i] = &Result{CallID: c.ID, Status: StatusRefused, Error: refuse("batch", TypeInvalidArgs, e.Code, e.Message, e.Suggestion)}
			return
		}
		c.Arguments = args
		resp.Results[i] = rt.Call(ctx, &c)
	})
	return resp
}
