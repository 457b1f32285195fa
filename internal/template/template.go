// Package template builds values from a call's arguments and result: the
// arguments of a tool's undo, verify, refresh and fallback calls, and the
// names of the entities it reads and writes.
//
//	t, _ := template.Compile(`{"refund_id": "{result.refund_id}", "order": "{args.order_id}"}`)
//	args, _ := t.JSON(template.NewScope(callArgs, callResult))
//
// A template is JSON (or, for entity names, a plain string) in which
// "{args.x}", "{result.a.b}" or plain "{x}" (an argument) stand for values:
// a string that is exactly one placeholder becomes the value itself (a
// number stays a number); a placeholder inside other text is written as
// text. Templates can only read; they run no code.
package template

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentreach/reach/internal/callgraph"
)

// Template is a compiled template. Immutable, so safe for concurrent use.
type Template struct {
	raw string
	doc any // the decoded JSON, for a JSON template
}

var placeholderRE = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_\-]+)*)\}`)

// Compile compiles a JSON template (a followup's arguments).
func Compile(raw string) (*Template, error) { return compile(raw, true) }

// CompileText compiles a plain-string template (an entity name).
func CompileText(raw string) (*Template, error) { return compile(raw, false) }

func compile(raw string, jsonDoc bool) (*Template, error) {
	t := &Template{raw: raw}
	if jsonDoc {
		if err := json.Unmarshal([]byte(raw), &t.doc); err != nil {
			return nil, fmt.Errorf("template %q is not JSON: %v", raw, err)
		}
	}
	for _, m := range placeholderRE.FindAllStringSubmatch(raw, -1) {
		root, _, _ := strings.Cut(m[1], ".")
		if strings.Contains(m[1], ".") && root != "args" && root != "result" {
			return nil, fmt.Errorf("template %q: %s must start with args. or result: write {args.%s} for an argument, or {result.%s} for a field of the result", raw, m[0], m[1], m[1])
		}
	}
	return t, nil
}

// String returns the template as written.
func (t *Template) String() string { return t.raw }

// ReadsResult returns the first placeholder of t that reads the result
// ("{result.x}"), if there is one: a template over arguments alone (a
// fallback's) has no result to read.
func (t *Template) ReadsResult() (string, bool) {
	for _, m := range placeholderRE.FindAllStringSubmatch(t.raw, -1) {
		if strings.HasPrefix(m[1], "result.") || m[1] == "result" {
			return m[0], true
		}
	}
	return "", false
}

// Scope is what a template can read: a call's arguments and result.
type Scope struct {
	args   any
	result any
}

// NewScope decodes a call's arguments and result (nil if none) for
// templates to read.
func NewScope(args, result []byte) Scope {
	var s Scope
	json.Unmarshal(args, &s.args)
	if len(result) > 0 {
		json.Unmarshal(result, &s.result)
	}
	return s
}

func (s Scope) lookup(path string) (any, error) {
	parts := strings.Split(path, ".")
	var v any
	switch parts[0] {
	case "args":
		v, parts = s.args, parts[1:]
	case "result":
		v, parts = s.result, parts[1:]
	default:
		v = s.args
	}
	for _, p := range parts {
		switch x := v.(type) {
		case map[string]any:
			val, ok := x[p]
			if !ok {
				return nil, fmt.Errorf("no field %q", path)
			}
			v = val
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("no element %q", path)
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("no field %q", path)
		}
	}
	return v, nil
}

func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "null"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (s Scope) interpolate(str string) (any, error) {
	if m := placeholderRE.FindStringSubmatch(str); m != nil && m[0] == str {
		return s.lookup(m[1])
	}
	var firstErr error
	out := placeholderRE.ReplaceAllStringFunc(str, func(ph string) string {
		v, err := s.lookup(ph[1 : len(ph)-1])
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return textOf(v)
	})
	return out, firstErr
}

// Text renders a plain-string template (an entity name).
func (t *Template) Text(s Scope) (string, error) {
	v, err := s.interpolate(t.raw)
	return textOf(v), err
}

// JSON renders a JSON template as canonical JSON.
func (t *Template) JSON(s Scope) (json.RawMessage, error) {
	var walk func(any) (any, error)
	walk = func(v any) (any, error) {
		switch x := v.(type) {
		case string:
			return s.interpolate(x)
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				w, err := walk(e)
				if err != nil {
					return nil, err
				}
				out[k] = w
			}
			return out, nil
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				w, err := walk(e)
				if err != nil {
					return nil, err
				}
				out[i] = w
			}
			return out, nil
		}
		return v, nil
	}
	v, err := walk(t.doc)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return callgraph.Normalize(nil, bytes.TrimSpace(b))
}
