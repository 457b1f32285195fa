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
	return RefusalNames(tool, s, args, true)
}

// RefusalNames is Refusal for arguments whose member names are all lower
// case ASCII unless fold (callgraph.Names.Fold): a stray (Schema.Stray)
// is then looked for only when the schema names a property otherwise.
func RefusalNames(tool string, s *Schema, args []byte, fold bool) *fault.Error {
	if len(args) == 0 || args[0] != '{' {
		return &fault.Error{Guard: "validate", Type: fault.TypeInvalidArgs, Code: "invalid_arguments",
			Message:    fmt.Sprintf("The arguments of %s must be a JSON object.", tool),
			Suggestion: "Call it again with an object of named arguments."}
	}
	if s == nil {
		return nil
	}
	if st := s.stray(args, fold); st != nil {
		// Checks and policies read the member as written and see no
		// property; a tool that binds its arguments as encoding/json
		// does reads it as the property.
		return &fault.Error{Guard: "validate", Type: fault.TypeInvalidArgs, Code: "invalid_arguments",
			Message: fmt.Sprintf("The arguments of %s name %q, which is not a property of its schema but %q spelled in another case: a tool may read it as %q, and reach's checks did not.",
				tool, st.Member, st.Property, st.Property),
			Suggestion: fmt.Sprintf("Spell it %q, as the schema does, and call it again.", st.Property),
			Fields:     []fault.FieldError{{Path: st.Path, Problem: fmt.Sprintf("%q is %q in another case", st.Member, st.Property), Fix: fmt.Sprintf("spell it %q", st.Property)}}}
	}
	problems, err := s.Check(args)
	if err != nil {
		return &fault.Error{Guard: "validate", Type: fault.TypeInvalidArgs, Code: "invalid_arguments",
			Message:    fmt.Sprintf("The arguments of %s are not valid JSON: %v.", tool, err),
			Suggestion: "Send the arguments as one JSON object, as the tool's input schema describes, and call it again."}
	}
	if problems == nil {
		return nil
	}
	e := &fault.Error{Guard: "validate", Type: fault.TypeInvalidArgs, Code: "invalid_arguments",
		// The message stands without the fields: the audit view and the UI
		// show it alone (ModelText lists the fields after it).
		Message:    fmt.Sprintf("The arguments of %s do not match its schema.", tool),
		Suggestion: "Fix the fields listed and call it again.", Fields: make([]fault.FieldError, len(problems))}
	for i, p := range problems {
		e.Fields[i] = fault.FieldError{Path: p.Path, Problem: p.Problem, Fix: p.Fix}
	}
	return e
}
