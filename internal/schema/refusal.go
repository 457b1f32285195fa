package schema

import (
	"fmt"

	"github.com/agentreach/reach/internal/fault"
)

// Refusal checks args, the canonical arguments of the tool named tool,
// against s (nil: any JSON object) and returns the validate stage's
// refusal (R2): every problem, with the field, what is wrong and how to
// fix it; or nil.
func Refusal(tool string, s *Schema, args []byte) *fault.Error {
	if len(args) == 0 || args[0] != '{' {
		return &fault.Error{Guard: "validate", Type: fault.TypeInvalidArgs, Code: "invalid_arguments",
			Message:    fmt.Sprintf("The arguments of %s must be a JSON object.", tool),
			Suggestion: "Call it again with an object of named arguments."}
	}
	if s == nil {
		return nil
	}
	problems, err := s.Check(args)
	if err != nil {
		return &fault.Error{Guard: "validate", Type: fault.TypeInvalidArgs, Code: "invalid_arguments",
			Message: fmt.Sprintf("The arguments of %s are not valid JSON: %v.", tool, err)}
	}
	if problems == nil {
		return nil
	}
	e := &fault.Error{Guard: "validate", Type: fault.TypeInvalidArgs, Code: "invalid_arguments",
		Message:    fmt.Sprintf("The arguments of %s do not match its schema:", tool),
		Suggestion: "Fix the fields listed and call it again.", Fields: make([]fault.FieldError, len(problems))}
	for i, p := range problems {
		e.Fields[i] = fault.FieldError{Path: p.Path, Problem: p.Problem, Fix: p.Fix}
	}
	return e
}
