package effects

import (
	"fmt"

	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/template"
)

// CompileFallbacks compiles the fallbacks of the tool name, a read if read
// (access names its level otherwise): the reads that answer in its place
// when it fails. A fallback's Args is a template over the call's
// arguments; an empty one passes them on as they are (a nil Args).
func CompileFallbacks(name string, read bool, access string, fs []Call) ([]*Followup, error) {
	if len(fs) == 0 {
		return nil, nil
	}
	if !read {
		return nil, fmt.Errorf("tool %s: fallback is for reads; a %s tool's failure goes to the model and the saga, never silently elsewhere", name, access)
	}
	out := make([]*Followup, 0, len(fs))
	for i, f := range fs {
		if f.Tool == "" {
			return nil, fmt.Errorf("tool %s: fallback %d needs a tool", name, i+1)
		}
		if f.Tool == name {
			return nil, fmt.Errorf("tool %s: fallback %d is the tool itself", name, i+1)
		}
		cf := &Followup{Tool: f.Tool}
		if f.Args != "" {
			tt, err := template.Compile(f.Args)
			if err != nil {
				return nil, fmt.Errorf("tool %s: fallback %s: %w", name, f.Tool, err)
			}
			if ph, ok := tt.ReadsResult(); ok {
				return nil, fmt.Errorf("tool %s: fallback %s: %s: a fallback's arguments come from the call's arguments ({args.x} or {x}); it has no result", name, f.Tool, ph)
			}
			cf.Args = tt
		}
		out = append(out, cf)
	}
	return out, nil
}

// FallbackNote is the note of a result that the fallback fb gave in place
// of tool, which failed with e: the model reads whose data it has, and
// why.
func FallbackNote(tool, fb string, e *fault.Error) string {
	why := "a transient failure"
	switch {
	case e == nil:
		why = "it failed"
	case e.Type == fault.TypeUnavailable:
		why = "it is unavailable: its circuit breaker is open"
	case e.Retry != "":
		why = "a transient failure, " + e.Retry + " attempts"
	}
	return fmt.Sprintf("%s failed (%s); this result comes from its fallback %s, not from %s.", tool, why, fb, tool)
}
