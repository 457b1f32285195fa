package reach

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
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
	for i, c := range env.ToolCalls {
		index[c.ID] = i
	}
	deps := make([][]int, n)
	for i, c := range env.ToolCalls {
		for _, ref := range refsIn(c.Arguments) {
			id, _, _ := strings.Cut(ref, ".")
			j, ok := index[id]
			if !ok || j == i {
				continue // reported when the call is resolved
			}
			deps[i] = append(deps[i], j)
		}
	}
	// Writes to one tool, or to one entity, run in envelope order: i after
	// the earlier write j, unless j already waits for i through $refs (a
	// forward reference orders them the other way, and an ordering edge
	// would make a false cycle).
	order := func(i, j int) {
		if !reaches(deps, j, i) {
			deps[i] = append(deps[i], j)
		}
	}
	// Every earlier writer, not only the last: a skipped edge leaves the
	// last writer ordered after this one, not before.
	writers := map[string][]int{}
	for i, c := range env.ToolCalls {
		t := rt.lookup(c.Tool)
		if t == nil || (t.Access != Write && t.Access != HighRisk) {
			continue
		}
		keys := []string{"tool\x00" + c.Tool}
		if eff := t.effects; eff != nil && len(eff.writes) > 0 {
			if len(refsIn(c.Arguments)) > 0 {
				keys = append(keys, "any-entity") // not known before its $ref: after every earlier entity write
				for k, js := range writers {
					if strings.HasPrefix(k, "entity\x00") {
						for _, j := range js {
							order(i, j)
						}
					}
				}
			} else if names, err := entityNames(eff.writes, newScope(c.Arguments, nil)); err == nil {
				for _, n := range names {
					keys = append(keys, "entity\x00"+n)
				}
				for _, j := range writers["any-entity"] {
					order(i, j)
				}
			}
		}
		for _, k := range keys {
			for _, j := range writers[k] {
				order(i, j)
			}
			writers[k] = append(writers[k], i)
		}
	}
	if cyc := findDepCycle(deps); cyc != nil {
		for _, i := range cyc {
			resp.Results[i] = &Result{CallID: env.ToolCalls[i].ID, Status: StatusRefused,
				Error: refuse("batch", TypeInvalidArgs, "ref_cycle",
					"The calls' $ref arguments depend on each other in a cycle.",
					"Split the batch: call the independent calls first, then the ones that use their results.")}
		}
	}
	done := make([]chan struct{}, n)
	for i := range done {
		done[i] = make(chan struct{})
	}
	run := &batchRun{calls: n}
	var wg sync.WaitGroup
	for i := range env.ToolCalls {
		if resp.Results[i] != nil {
			close(done[i])
			continue
		}
		wg.Go(func() {
			defer close(done[i])
			c := env.ToolCalls[i]
			for _, j := range deps[i] {
				<-done[j]
			}
			args, err := substituteRefs(c.Arguments, func(id string) (*Result, bool) {
				j, ok := index[id]
				if !ok || j == i {
					return nil, false
				}
				return resp.Results[j], true
			})
			if err != nil {
				resp.Results[i] = &Result{CallID: c.ID, Status: StatusRefused, Error: err}
				return
			}
			c.Arguments = args
			resp.Results[i] = rt.Call(context.WithValue(ctx, batchKey{}, &batchCall{run: run, index: i, outer: batchOf(ctx)}), &c)
		})
	}
	wg.Wait()
	return resp
}

// batchRun is one run of Batch.
type batchRun struct{ calls int } // not empty: distinct runs have distinct addresses

// batchCall marks, in the context, a call that Batch runs and every call
// nested under it through its Func's context: the call at index of run,
// under outer when that Batch ran inside a call of another one.
//
// Two calls under different calls of one run are independent: neither
// waits for the other (a call that uses another's result starts only once
// that one has ended), which an undo of one relies on to wait for the
// other's write (see holder.blockedBy). A call made with a context that
// does not come from its caller's, such as its request's, carries no mark,
// so nothing is known of what waits for it.
type batchCall struct {
	run   *batchRun
	index int
	outer *batchCall
}

type batchKey struct{}

func batchOf(ctx context.Context) *batchCall {
	b, _ := ctx.Value(batchKey{}).(*batchCall)
	return b
}

// independent reports whether the calls marked b and o run under
// different calls of one Batch run (see batchCall).
func (b *batchCall) independent(o *batchCall) bool {
	for x := b; x != nil; x = x.outer {
		for y := o; y != nil; y = y.outer {
			if x.run == y.run && x.index != y.index {
				return true
			}
		}
	}
	return false
}

// refsIn lists the "$ref" strings anywhere in args.
func refsIn(args json.RawMessage) []string {
	if !bytes.Contains(args, []byte(`"$ref"`)) {
		return nil
	}
	var v any
	if json.Unmarshal(args, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := refOf(x); ok {
				out = append(out, r)
				return
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

func refOf(m map[string]any) (string, bool) {
	if len(m) != 1 {
		return "", false
	}
	r, ok := m["$ref"].(string)
	return r, ok
}

// substituteRefs replaces each {"$ref": "id.path"} by that part of the
// referenced call's data.
func substituteRefs(args json.RawMessage, result func(id string) (*Result, bool)) (json.RawMessage, *Error) {
	if !bytes.Contains(args, []byte(`"$ref"`)) {
		return args, nil
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return args, nil // validate reports it
	}
	var failure *Error
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := refOf(x); ok {
				val, e := resolveRef(ref, result)
				if e != nil && failure == nil {
					failure = e
				}
				return val
			}
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	v = walk(v)
	if failure != nil {
		return nil, failure
	}
	b, _ := json.Marshal(v)
	return b, nil
}

func resolveRef(ref string, result func(string) (*Result, bool)) (any, *Error) {
	id, path, _ := strings.Cut(ref, ".")
	bad := func(msg string) *Error {
		return refuse("batch", TypeInvalidArgs, "bad_ref", msg,
			`Use {"$ref": "<call_id>.<field>.<field>"} naming an earlier call of the same batch and a field of its data.`)
	}
	res, ok := result(id)
	if !ok {
		return nil, bad(fmt.Sprintf("$ref %q names no other call of this batch.", ref))
	}
	if res == nil || res.Status != StatusSuccess {
		return nil, refuse("batch", TypeInvalidArgs, "ref_failed",
			fmt.Sprintf("This call uses the result of %s, which did not succeed.", id),
			"Fix or retry "+id+" first, then call this again.")
	}
	var v any
	if err := json.Unmarshal(res.Data, &v); err != nil {
		return nil, bad(fmt.Sprintf("$ref %q: the result of %s is not JSON.", ref, id))
	}
	if path == "" {
		return v, nil
	}
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			val, ok := x[p]
			if !ok {
				return nil, bad(fmt.Sprintf("$ref %q: the result of %s has no field %q.", ref, id, p))
			}
			v = val
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil, bad(fmt.Sprintf("$ref %q: %q is not an index of a %d-item list.", ref, p, len(x)))
			}
			v = x[i]
		default:
			return nil, bad(fmt.Sprintf("$ref %q: cannot take %q of a scalar.", ref, p))
		}
	}
	return v, nil
}

// reaches reports whether call from depends on call to, directly or not.
func reaches(deps [][]int, from, to int) bool {
	seen := make([]bool, len(deps))
	stack := []int{from}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i == to {
			return true
		}
		if seen[i] {
			continue
		}
		seen[i] = true
		stack = append(stack, deps[i]...)
	}
	return false
}

// findDepCycle returns every call on a dependency cycle (each strongly
// connected component of more than one call, by Tarjan's algorithm), or
// nil. All of them must be refused: a call left on any cycle would wait
// for the others forever.
func findDepCycle(deps [][]int) []int {
	n := len(deps)
	index := make([]int, n) // 0: not visited; else visit order + 1
	low := make([]int, n)
	on := make([]bool, n)
	var stack, cyc []int
	next := 1
	var visit func(int)
	visit = func(i int) {
		index[i], low[i] = next, next
		next++
		stack = append(stack, i)
		on[i] = true
		for _, j := range deps[i] {
			switch {
			case index[j] == 0:
				visit(j)
				low[i] = min(low[i], low[j])
			case on[j]:
				low[i] = min(low[i], index[j])
			}
		}
		if low[i] != index[i] {
			return
		}
		k := len(stack) - 1
		for stack[k] != i {
			k--
		}
		comp := stack[k:]
		stack = stack[:k]
		for _, c := range comp {
			on[c] = false
		}
		if len(comp) > 1 {
			cyc = append(cyc, comp...)
		}
	}
	for i := range deps {
		if index[i] == 0 {
			visit(i)
		}
	}
	return cyc
}
