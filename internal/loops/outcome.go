package loops

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/jsonscan"
	"github.com/agentreach/reach/internal/records"
)

// DoneTool is Done for a tool call's step, given what the call's path
// returned (res and err, read as toolOutcome reads them). The result is
// read as an observation into d's own buffer, under d's lock: it is not
// copied anew for every call.
func (d *Detector) DoneTool(s *Step, res *records.Result, err error) {
	if s == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if s.seq == 0 {
		return // not allowed, or reported already: nothing to read
	}
	o := toolOutcome(res, err, &d.obs)
	d.done(s, &o)
}

// toolOutcome is what the runtime's tool call produced, as the detectors
// read it (res and err are what the call's path returned), with the
// observation of a result in *buf (kept there for the next one) when buf
// is not nil.
func toolOutcome(res *records.Result, err error, buf *[]byte) Outcome {
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
			o.Result = appendText(buf, res.Error.Message)
		}
	default:
		o.Result = observed(res.Data, buf)
	}
	return o
}

// maxObservation bounds the buffer a Detector keeps for observations
// (DoneTool): a larger result is read into one of its own.
const maxObservation = 64 << 10

// Text is a model's text, or an error's message, as an observation: a
// JSON string.
func Text(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// appendText is Text written into *buf (kept there for the next
// observation) when buf is not nil and s is not too large: the same bytes
// (jsonscan.AppendQuoted writes a string as encoding/json does), without
// an allocation of their own.
func appendText(buf *[]byte, s string) []byte {
	if buf == nil || len(s) > maxObservation {
		return Text(s)
	}
	b := jsonscan.AppendQuoted((*buf)[:0], s)
	if cap(b) <= maxObservation {
		*buf = b[:0]
	}
	return b
}

// plainString reports whether data is a JSON string, quotes and all, with
// nothing in it that Normalize would rewrite or refuse: no escape, no
// control character, valid UTF-8. Its canonical JSON is then data itself.
func plainString(data []byte) bool {
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return false
	}
	in := data[1 : len(data)-1]
	ascii := true
	for _, c := range in {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.Valid(in)
}

// observed is a tool's result as an observation: its canonical JSON, or a
// JSON string of what is not JSON.
func observed(data []byte, buf *[]byte) []byte {
	var dst []byte
	if buf != nil && len(data) <= maxObservation {
		dst = (*buf)[:0]
	}
	if dst == nil {
		dst = make([]byte, 0, len(data))
	}
	var c []byte
	if plainString(data) {
		// A text answer (an echo, a message): already canonical, copied
		// as Normalize would copy it, without its parse.
		c = append(dst, data...)
	} else {
		var err error
		if c, err = callgraph.Normalize(dst, data); err != nil {
			return appendText(buf, string(data))
		}
	}
	if buf != nil && cap(c) <= maxObservation {
		*buf = c[:0]
	}
	return c
}
