package schema

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

// Schema is a tool's compiled input schema: the quick path (Quick) where
// the schema stays within its subset, the full validator for the rest and
// for the error messages. Immutable and safe for concurrent use.
type Schema struct {
	full  *jsonschema.Schema
	quick *Quick // nil if the schema is beyond the subset
	names *names // the properties it names, for Stray; nil if none
	// foldable: some property is named with an upper case ASCII letter
	// or a byte past ASCII.
	foldable bool
}

// Compile compiles raw, the input schema of the tool name.
func Compile(name string, raw []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("input schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	url := "reach:///tools/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	out := &Schema{full: s, quick: CompileQuick(raw)}
	if m, ok := doc.(map[string]any); ok {
		out.names, out.foldable = compileNames(m)
	}
	return out, nil
}

// Problem is one way the arguments fail the schema: where (a JSON pointer
// into them, "" for the whole object), what is wrong, and how to fix it
// (if the failing keyword says).
type Problem struct {
	Path, Problem, Fix string
}

// Check validates arguments, which must be canonical JSON (as
// callgraph.Normalize writes it). It returns nil if they are valid, else
// every problem (at least one).
func (s *Schema) Check(args []byte) ([]Problem, error) {
	if s.quick != nil && s.quick.Valid(args) {
		return nil, nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return nil, err
	}
	err = s.full.Validate(v)
	if err == nil {
		return nil, nil
	}
	var out []Problem
	if ve, ok := errors.AsType[*jsonschema.ValidationError](err); ok {
		out = problems(ve)
	}
	if len(out) == 0 {
		out = []Problem{{Problem: err.Error()}}
	}
	return out, nil
}

// problems flattens a validation error tree into its leaves.
func problems(ve *jsonschema.ValidationError) []Problem {
	var out []Problem
	var walk func(*jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			path := ""
			if len(v.InstanceLocation) > 0 {
				path = "/" + strings.Join(v.InstanceLocation, "/")
			}
			out = append(out, Problem{Path: path, Problem: v.ErrorKind.LocalizedString(printer), Fix: fixFor(v)})
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}

// fixFor suggests a fix from the failing keyword.
func fixFor(v *jsonschema.ValidationError) string {
	kw := v.ErrorKind.KeywordPath()
	if len(kw) == 0 {
		return ""
	}
	switch kw[len(kw)-1] {
	case "required":
		return "add the missing field"
	case "additionalProperties":
		return "remove the unknown field"
	case "type":
		return "use a value of the type shown"
	case "enum", "const":
		return "use one of the allowed values"
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		return "use a number within the range"
	case "minLength", "maxLength", "pattern", "format":
		return "change the string to match"
	}
	return ""
}
