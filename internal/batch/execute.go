package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/records"
)

// Limits on a decoded envelope.
const (
	MaxEnvelopeBytes = 4 << 20
	MaxCalls         = 256
)

// Decode decodes an envelope (data) into env strictly, and checks its
// calls (n of them, call(i) giving the id and tool of each): unknown
// fields, members named in another case or twice, trailing data, missing
// or duplicate call ids and oversized input are errors that say what to
// fix.
func Decode(data []byte, env any, n func() int, call func(i int) (id, tool string)) error {
	if len(data) > MaxEnvelopeBytes {
		return fmt.Errorf("envelope is %d bytes; the limit is %d", len(data), MaxEnvelopeBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(env); err != nil {
		return fmt.Errorf("decoding envelope: %w", err)
	}
	if dec.More() {
		return errors.New("decoding envelope: unexpected data after the JSON object")
	}
	if err := exactNames(data, membersFor(reflect.TypeOf(env))); err != nil {
		return err
	}
	switch c := n(); {
	case c == 0:
		return errors.New(`envelope has no tool_calls: send {"tool_calls": [{"call_id": ..., "tool": ..., "arguments": {...}}]}`)
	case c > MaxCalls:
		return fmt.Errorf("envelope has %d tool calls; the limit is %d", c, MaxCalls)
	}
	seen := make(map[string]bool, n())
	for i := range n() {
		switch id, tool := call(i); {
		case id == "":
			return fmt.Errorf("tool_calls[%d]: call_id is required", i)
		case seen[id]:
			return fmt.Errorf("tool_calls[%d]: call_id %q is used twice", i, id)
		case tool == "":
			return fmt.Errorf("tool_calls[%d] (%s): tool is required", i, id)
		default:
			seen[id] = true
		}
	}
	return nil
}

// Execute runs calls as Plan orders them (see Run), each with its $refs
// substituted (see Substitute) by do, and returns their results in the
// calls' order. A call on a $ref cycle, or whose $ref cannot be resolved,
// is refused without running.
func Execute(ctx context.Context, calls []Call, do func(ctx context.Context, i int, args json.RawMessage) *records.Result) []*records.Result {
	out := make([]*records.Result, len(calls))
	index := make(map[string]int, len(calls))
	for i, c := range calls {
		index[c.ID] = i
	}
	refused := func(i int, code, msg, suggestion string) *records.Result {
		return &records.Result{CallID: calls[i].ID, Status: records.StatusRefused,
			Error: &fault.Error{Guard: "batch", Type: fault.TypeInvalidArgs, Code: code, Message: msg, Suggestion: suggestion}}
	}
	// What the $refs add to the calls' arguments, together: each call's
	// within MaxArgumentBytes, and all of them within MaxAddedBytes.
	var added atomic.Int64
	order := Plan(calls)
	for _, i := range order.Cycle {
		out[i] = refused(i, "ref_cycle", "The calls' $ref arguments depend on each other in a cycle.",
			"Split the batch: call the independent calls first, then the ones that use their results.")
	}
	Run(ctx, order.Deps, func(i int) bool { return out[i] != nil }, func(ctx context.Context, i int) {
		limit := min(MaxArgumentBytes, len(calls[i].Args)+max(0, MaxAddedBytes-int(added.Load())))
		args, e := substitute(calls[i].Args, func(id string) (Result, bool) {
			j, ok := index[id]
			if !ok || j == i {
				return Result{}, false
			}
			if r := out[j]; r != nil && r.Status == records.StatusSuccess {
				return Result{Data: r.Data, Succeeded: true}, true
			}
			return Result{}, true
		}, limit)
		if e != nil {
			out[i] = refused(i, e.Code, e.Message, e.Suggestion)
			return
		}
		if grew := int64(max(0, len(args)-len(calls[i].Args))); added.Add(grew) > MaxAddedBytes {
			// Calls running at once each found room: the later is refused.
			added.Add(-grew)
			e := tooLarge(MaxAddedBytes)
			out[i] = refused(i, e.Code, e.Message, e.Suggestion)
			return
		}
		out[i] = do(ctx, i, args)
	})
	return out
}
