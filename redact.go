package reach

import (
	"context"
	"encoding/json"

	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/redact"
)

// defaultRedactor masks what a runtime without Options.Redactor lets out:
// values under secret names, and no registered values.
var defaultRedactor Redactor = mustRedactor()

func mustRedactor() *redact.Redactor {
	r, err := redact.New(nil)
	if err != nil {
		panic(err) // no secrets given: New cannot fail
	}
	return r
}

// redactError returns e with its texts masked: e itself when there is
// nothing to mask, else a copy.
func (rt *Runtime) redactError(e *Error) *Error {
	if e == nil {
		return nil
	}
	return fault.Masked(e, rt.opts.Redactor.RedactString)
}

// refuseFrame ends f refused with e (masked), records it and returns the
// masked error, for the caller to return.
func (rt *Runtime) refuseFrame(ctx context.Context, f *Frame, e *Error) *Error {
	f.finish(Refused, e, "")
	rt.record(ctx, f)
	if stop := rt.noteFrameRefusal(ctx, f, e); stop != nil {
		return stop
	}
	return f.Err()
}

// ShownArgs returns the frame's arguments as views and records show them:
// masked by the runtime's Redactor. (Args holds them as the guards compare
// them, unmasked: never show Args.) Args itself is returned when there is
// nothing to mask.
func (f *Frame) ShownArgs() json.RawMessage {
	if len(f.Args) == 0 || f.Request == nil {
		return f.Args
	}
	return f.Request.rt.opts.Redactor.Redact(f.Args)
}
