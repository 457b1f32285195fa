// Package batch orders and runs the calls of one envelope (R4): a call
// whose arguments hold {"$ref": "c1.path"} waits for call c1 and gets
// that part of its result; writes to one tool or one entity run in the
// envelope's order; the rest run concurrently.
//
//	plan := batch.Plan(calls)          // plan.Deps[i]: what call i waits for; plan.Cycle: refused
//	batch.Run(ctx, plan.Deps, skip, func(ctx context.Context, i int) {
//		args, err := batch.Substitute(calls[i].Args, resultOf)
//		...
//	})
//
// Every call that Run runs gets a context marked with its place in the
// run (From), which says which calls are independent of each other.
package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Call is what ordering needs to know of one call of a batch.
type Call struct {
	ID   string
	Args json.RawMessage
	// Write marks a write: it runs after the batch's earlier writes of the
	// same Tool and of the same entities.
	Write bool
	Tool  string
	// Entities are the entities a write writes, as far as they are known
	// before it runs (its arguments name them). AnyEntity marks a write
	// whose entities are named by its $refs, known only once they resolve:
	// it runs after every earlier write of an entity, and every later one
	// runs after it.
	Entities  []string
	AnyEntity bool
}

// Order is how the calls of a batch wait for each other.
type Order struct {
	// Deps lists, for each call, the calls it waits for.
	Deps [][]int
	// Cycle lists every call on a dependency cycle (each strongly
	// connected component of more than one call): all of them must be
	// refused, as a call left on any cycle would wait for the others
	// forever.
	Cycle []int
}

// Plan orders calls: a call waits for the calls its $refs name (a $ref
// to no other call of the batch is left for Substitute to report), and a
// write for the earlier writes of its tool and its entities, unless that
// earlier write already waits for it through $refs (a forward reference
// orders them the other way, and an ordering edge would make a false
// cycle).
func Plan(calls []Call) Order {
	n := len(calls)
	index := make(map[string]int, n)
	for i, c := range calls {
		index[c.ID] = i
	}
	deps := make([][]int, n)
	for i, c := range calls {
		for _, ref := range Refs(c.Args) {
			id, _, _ := strings.Cut(ref, ".")
			j, ok := index[id]
			if !ok || j == i {
				continue // reported when the call is resolved
			}
			deps[i] = append(deps[i], j)
		}
	}
	order := func(i, j int) {
		if !reaches(deps, j, i) {
			deps[i] = append(deps[i], j)
		}
	}
	// Every earlier writer, not only the last: a skipped edge leaves the
	// last writer ordered after this one, not before.
	writers := map[string][]int{}
	for i, c := range calls {
		if !c.Write {
			continue
		}
		keys := []string{"tool\x00" + c.Tool}
		switch {
		case c.AnyEntity:
			keys = append(keys, "any-entity") // not known before its $ref: after every earlier entity write
			for k, js := range writers {
				if strings.HasPrefix(k, "entity\x00") {
					for _, j := range js {
						order(i, j)
					}
				}
			}
		case len(c.Entities) > 0:
			for _, n := range c.Entities {
				keys = append(keys, "entity\x00"+n)
			}
			for _, j := range writers["any-entity"] {
				order(i, j)
			}
		}
		for _, k := range keys {
			for _, j := range writers[k] {
				order(i, j)
			}
			writers[k] = append(writers[k], i)
		}
	}
	return Order{Deps: deps, Cycle: findCycle(deps)}
}

// Run runs do for every call i that skip does not name, concurrently,
// each once the calls it waits for (deps[i]) are done, and returns when
// all are. The ctx do gets is marked (From) with the call's place in
// this run, under the mark ctx carries already (a Batch inside a call of
// another one).
func Run(ctx context.Context, deps [][]int, skip func(i int) bool, do func(ctx context.Context, i int)) {
	done := make([]chan struct{}, len(deps))
	for i := range done {
		done[i] = make(chan struct{})
	}
	r := &run{calls: len(deps)}
	outer := From(ctx)
	var wg sync.WaitGroup
	for i := range deps {
		if skip(i) {
			close(done[i])
			continue
		}
		wg.Go(func() {
			defer close(done[i])
			for _, j := range deps[i] {
				<-done[j]
			}
			do(context.WithValue(ctx, markKey{}, &Mark{run: r, index: i, outer: outer}), i)
		})
	}
	wg.Wait()
}

// run is one run of Run.
type run struct{ calls int } // not empty: distinct runs have distinct addresses

// Mark marks, in the context, a call that Run runs and every call nested
// under it through its Func's context: the call at index of run, under
// outer when that batch ran inside a call of another one.
//
// Two calls under different calls of one run are independent: neither
// waits for the other (a call that uses another's result starts only once
// that one has ended), which an undo of one relies on to wait for the
// other's write. A call made with a context that does not come from its
// caller's, such as its request's, carries no mark, so nothing is known of
// what waits for it.
type Mark struct {
	run   *run
	index int
	outer *Mark
}

type markKey struct{}

// From returns the mark of the batch call ctx runs under, or nil.
func From(ctx context.Context) *Mark {
	m, _ := ctx.Value(markKey{}).(*Mark)
	return m
}

// Independent reports whether the calls marked m and o run under
// different calls of one run (see Mark). A nil mark is independent of
// nothing.
func (m *Mark) Independent(o *Mark) bool {
	for x := m; x != nil; x = x.outer {
		for y := o; y != nil; y = y.outer {
			if x.run == y.run && x.index != y.index {
				return true
			}
		}
	}
	return false
}

// Refs lists the "$ref" strings anywhere in args.
func Refs(args json.RawMessage) []string {
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

// Result is what a $ref reads of the call it names: its data, if it
// succeeded.
type Result struct {
	Data      json.RawMessage
	Succeeded bool
}

// RefError says why a $ref could not be resolved: Code is "bad_ref" (it
// names no other call, or no part of its data) or "ref_failed" (the call
// it names did not succeed).
type RefError struct {
	Code, Message, Suggestion string
}

func (e *RefError) Error() string { return e.Code + ": " + e.Message }

// Substitute replaces each {"$ref": "id.path"} in args by that part of the
// data of call id; result returns that call's outcome (false: no other
// call of the batch has that id). Arguments that are not JSON are
// returned as they are, for validation to report. Arguments that would
// pass MaxArgumentBytes once replaced are refused (ref_too_large).
func Substitute(args json.RawMessage, result func(id string) (Result, bool)) (json.RawMessage, *RefError) {
	return substitute(args, result, MaxArgumentBytes)
}

// MaxArgumentBytes bounds a call's arguments once its $refs are replaced:
// the most an envelope holds. A $ref costs a dozen bytes and may stand for
// a whole result (32 KiB by default): named over and over, a few megabytes
// of envelope were gigabytes of arguments, built, encoded and checked in
// memory before the call could be refused.
const MaxArgumentBytes = MaxEnvelopeBytes

// MaxAddedBytes bounds what the $refs of one envelope add to its calls'
// arguments together (Execute): its calls, each within MaxArgumentBytes,
// are up to MaxCalls.
const MaxAddedBytes = 4 * MaxEnvelopeBytes

// substitute is Substitute with arguments of at most limit bytes once
// replaced. The size is counted as each $ref is resolved, so that the
// arguments past it are never built; each call's data is decoded once,
// and each $ref's value encoded once, however often it is named.
func substitute(args json.RawMessage, result func(id string) (Result, bool), limit int) (json.RawMessage, *RefError) {
	if !bytes.Contains(args, []byte(`"$ref"`)) {
		return args, nil
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return args, nil // validate reports it
	}
	type resolved struct {
		v    any
		size int
		err  *RefError
	}
	data := map[string]any{}        // by call id: its data, decoded
	values := map[string]resolved{} // by $ref
	size := len(args)
	var failure *RefError
	var walk func(any) any
	walk = func(v any) any {
		if failure != nil {
			return v
		}
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := refOf(x); ok {
				r, seen := values[ref]
				if !seen {
					r.v, r.err = resolve(ref, result, data)
					if r.err == nil {
						r.size = len(encode(r.v))
					}
					values[ref] = r
				}
				if r.err != nil {
					failure = r.err
					return nil
				}
				if size += r.size; size > limit {
					failure = tooLarge(limit)
					return nil
				}
				return r.v
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
	b := encode(v)
	if len(b) > limit { // the counting above is of the values alone
		return nil, tooLarge(limit)
	}
	return b, nil
}

// encode is v as JSON, its text as it was (no <, > or & escaped: six
// bytes each, arguments re-encoded could pass the bound they were within).
func encode(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// tooLarge is the refusal of arguments that would pass limit bytes once
// their $refs are replaced.
func tooLarge(limit int) *RefError {
	return &RefError{Code: "ref_too_large",
		Message: fmt.Sprintf("This call's arguments, with their $refs replaced by the results they name, would pass %d bytes (a call's at most %d, and %d added by the $refs of one batch in all); nothing ran.",
			limit, MaxArgumentBytes, MaxAddedBytes),
		Suggestion: `Name only the part of a result the call needs ({"$ref": "<call_id>.<field>"}), and each once; or split the batch.`}
}

// resolve returns the value ref names; data keeps the decoded data of the
// calls resolved so far, by id.
func resolve(ref string, result func(string) (Result, bool), data map[string]any) (any, *RefError) {
	id, path, _ := strings.Cut(ref, ".")
	bad := func(msg string) *RefError {
		return &RefError{Code: "bad_ref", Message: msg,
			Suggestion: `Use {"$ref": "<call_id>.<field>.<field>"} naming an earlier call of the same batch and a field of its data.`}
	}
	v, decoded := data[id]
	if !decoded {
		res, ok := result(id)
		if !ok {
			return nil, bad(fmt.Sprintf("$ref %q names no other call of this batch.", ref))
		}
		if !res.Succeeded {
			return nil, &RefError{Code: "ref_failed",
				Message:    fmt.Sprintf("This call uses the result of %s, which did not succeed.", id),
				Suggestion: "Fix or retry " + id + " first, then call this again."}
		}
		if err := json.Unmarshal(res.Data, &v); err != nil {
			return nil, bad(fmt.Sprintf("$ref %q: the result of %s is not JSON.", ref, id))
		}
		data[id] = v
	}
	if path == "" {
		return v, nil
	}
	for p := range strings.SplitSeq(path, ".") {
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

// findCycle returns every call on a dependency cycle (see Order.Cycle),
// by Tarjan's algorithm, or nil.
func findCycle(deps [][]int) []int {
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
