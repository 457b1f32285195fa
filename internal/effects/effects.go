// Package effects compiles a tool's side-effect contract (S1-S3): the
// entities it reads and writes (templates over its arguments), the calls
// the runtime makes on its behalf (its undo, its verify check, the read
// that refreshes an entity before a write), and the verify condition, a
// CEL expression over the check's result, the write's arguments and its
// output.
//
//	c, err := effects.Compile("refund", effects.Spec{
//		Writes: []string{"order:{order_id}"},
//		Undo:   &effects.Call{Tool: "cancel_refund", Args: `{"id": "{result.refund_id}"}`},
//	})
//	writes, err := effects.Names(c.Writes, template.NewScope(args, nil))
package effects

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"cel.dev/cel-go/cel"

	"github.com/agentreach/reach/internal/template"
)

// Call is a call made on a tool's behalf, as configured: the tool, and
// its arguments as a JSON template ("" is {}).
type Call struct {
	Tool, Args string
}

// Followup is a compiled Call.
type Followup struct {
	Tool string
	Args *template.Template
}

// CompileFollowup compiles c; an empty Args is {}. Errors begin with
// what ("undo", "fallback x", ...).
func CompileFollowup(what string, c Call) (*Followup, error) {
	if c.Tool == "" {
		return nil, fmt.Errorf("%s needs a tool", what)
	}
	args := c.Args
	if args == "" {
		args = "{}"
	}
	t, err := template.Compile(args)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &Followup{Tool: c.Tool, Args: t}, nil
}

// Spec is a tool's contract as configured.
type Spec struct {
	Reads, Writes []string // entity names, templates over the arguments ("order:{order_id}")
	Undo          *Call
	Refresh       *Call // needs Writes
	Verify        *Call
	Condition     string // the verify condition (CEL), with Verify
}

// Contract is a tool's compiled contract. Immutable.
type Contract struct {
	Reads, Writes []*template.Template
	Undo          *Followup
	Refresh       *Followup
	Verify        *Followup
	cond          cel.Program
}

// celEnv is the environment of verify conditions, made when the first
// one is compiled: most gateways have none, and making it runs much of
// CEL's code.
var celEnv = sync.OnceValue(func() *cel.Env {
	env, err := cel.NewEnv(cel.Variable("result", cel.DynType), cel.Variable("args", cel.DynType), cel.Variable("output", cel.DynType))
	if err != nil {
		panic(err)
	}
	return env
})

// Compile compiles the contract of the tool name; an empty s is nil.
// Errors begin with "tool name".
func Compile(name string, s Spec) (*Contract, error) {
	if len(s.Reads) == 0 && len(s.Writes) == 0 && s.Undo == nil && s.Verify == nil && s.Refresh == nil {
		return nil, nil
	}
	c := &Contract{}
	for _, list := range []struct {
		src []string
		dst *[]*template.Template
	}{{s.Reads, &c.Reads}, {s.Writes, &c.Writes}} {
		for _, e := range list.src {
			tt, err := template.CompileText(e)
			if err != nil {
				return nil, fmt.Errorf("tool %s: entity %w", name, err)
			}
			*list.dst = append(*list.dst, tt)
		}
	}
	for _, f := range []struct {
		what string
		src  *Call
		dst  **Followup
	}{{"undo", s.Undo, &c.Undo}, {"refresh", s.Refresh, &c.Refresh}, {"verify", s.Verify, &c.Verify}} {
		if f.src == nil {
			continue
		}
		var err error
		if *f.dst, err = CompileFollowup(f.what, *f.src); err != nil {
			return nil, fmt.Errorf("tool %s: %w", name, err)
		}
		if f.what == "refresh" && len(s.Writes) == 0 {
			return nil, fmt.Errorf("tool %s: refresh needs the entities the tool writes (Writes)", name)
		}
	}
	if s.Verify != nil {
		ast, iss := celEnv().Compile(s.Condition)
		if iss != nil && iss.Err() != nil {
			return nil, fmt.Errorf("tool %s: verify condition %q: %v", name, s.Condition, iss.Err())
		}
		if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
			return nil, fmt.Errorf("tool %s: verify condition %q must be true or false, not %s", name, s.Condition, ast.OutputType())
		}
		var err error
		if c.cond, err = celEnv().Program(ast); err != nil {
			return nil, fmt.Errorf("tool %s: verify condition: %w", name, err)
		}
	}
	return c, nil
}

// Names renders entity templates for one call: the names, sorted, each
// once.
func Names(ts []*template.Template, s template.Scope) ([]string, error) {
	var out []string
	for _, t := range ts {
		n, err := t.Text(s)
		if err != nil {
			return nil, fmt.Errorf("entity %s: %w", t, err)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Confirms evaluates the verify condition over result (the check's
// result), args (the write's arguments) and output (the write's result),
// all JSON. It returns "" if the condition holds, else why not: "it
// evaluated to false", or the evaluation's error.
func (c *Contract) Confirms(result, args, output []byte) string {
	var r, a, o any
	json.Unmarshal(result, &r)
	json.Unmarshal(args, &a)
	json.Unmarshal(output, &o)
	v, _, err := c.cond.Eval(map[string]any{"result": r, "args": a, "output": o})
	if err != nil {
		return err.Error()
	}
	if b, ok := v.Value().(bool); ok && b {
		return ""
	}
	return "it evaluated to false"
}
