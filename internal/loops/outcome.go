package loops

import (
	"encoding/json"

	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/records"
)

// ToolOutcome is what the runtime's tool call produced, as the detectors
// read it: res and err are what the call's path returned.
func ToolOutcome(res *records.Result, err error) Outcome {
	var o Outcome
	switch {
	case err != nil || res.Status == records.StatusRefused || res.Status == records.StatusCancelled || res.Status == records.StatusPending:
		o.Refused = true
	case res.Replayed:
		// An idempotent replay ran nothing and observed nothing new: it is a
		// client's retry of one call, not a decision to call again.
		o.Refused = true
	case res.Error != nil && res.Error.Type == fault.TypeUnavailable && res.Error.Retry == "":
		// An open circuit breaker failed it at once: nothing ran, nothing
		// was observed, as with a refusal (the breaker, not the retry
		// budget, bounds what a dead tool costs).
		o.Refused = true
	case res.Status == records.StatusError:
		o.Error = true
		if res.Error != nil {
			o.ErrorType = res.Error.Code
			if (res.Error.Type == fault.TypeTransient || res.Error.Type == fault.TypeUnavailable) && !Transient(o.ErrorType) {
				// A failure the executor found transient (a retryable
				// tool's, or one whose message says so) under the tool's
				// own code: a retry of it is not a repeat.
				o.ErrorType = "unavailable"
			}
			o.Result = Text(res.Error.Message)
		}
	default:
		o.Result = observed(res.Data)
	}
	return o
}

// Text is a model's text, or an error's message, as an observation: a
// JSON string.
func Text(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// observed is a tool's result as an observation: its canonical JSON, or a
// JSON string of what is not JSON.
func observed(data []byte) []byte {
	if c, err := callgraph.Normalize(make([]byte, 0, len(data)), data); err == nil {
		return c
	}
	return Text(string(data))
}
