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
	d.applyHeld()
	o := toolOutcome(res, err, &d.obs, nil)
	d.done(s, &o)
}

// maxHeld bounds the outcomes a Detector holds (HoldTool): with as many
// held, the next is applied at once, after them.
const maxHeld = 8

// heldDone is a tool call's outcome that HoldTool held: what DoneTool
// reads of the call's result, copied.
type heldDone struct {
	s    *Step
	o    Outcome // the outcome, but for a success's observation
	raw  bool    // a success: its observation is to be read from data when applied
	data []byte  // a success's data as returned, or a failure's message as an observation (o.Result); kept for the next
}

// HoldTool is DoneTool held back for later: it copies what DoneTool
// reads of res (its status, its error's type, code and message, its
// data), so that res and its buffers may be reused as soon as it
// returns, and d applies the outcome before it does anything else: its
// next Check, Done, DoneTool or HoldTool, or Flush, whichever comes
// first. Outcomes held are applied in the order they were held, each
// where DoneTool would have applied it, so no verdict changes. It
// reports whether this is the first outcome held since d last applied
// them: the caller then has Flush called soon, off the call's path (the
// ones held after it are applied with it).
//
// A result larger than d's buffer for observations, or an outcome past
// the few a Detector holds, is applied at once (after those held).
func (d *Detector) HoldTool(s *Step, res *records.Result, err error) (first bool) {
	if s == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if s.seq == 0 {
		return false // not allowed, or reported already: nothing to read
	}
	if len(d.held) == maxHeld || err == nil && res != nil && len(res.Data) > maxObservation {
		d.applyHeld()
		o := toolOutcome(res, err, &d.obs, nil)
		d.done(s, &o)
		return false
	}
	if len(d.held) == cap(d.held) {
		d.held = append(d.held, heldDone{})
	} else {
		d.held = d.held[:len(d.held)+1]
	}
	h := &d.held[len(d.held)-1]
	h.s = s
	h.o = toolOutcome(res, err, nil, &h.data)
	h.raw = !h.o.Refused && !h.o.Error
	return len(d.held) == 1
}

// Flush applies the outcomes HoldTool held.
func (d *Detector) Flush() {
	d.mu.Lock()
	d.applyHeld()
	d.mu.Unlock()
}

// applyHeld applies the outcomes held, in order, with d.mu held.
func (d *Detector) applyHeld() {
	for i := range d.held {
		h := &d.held[i]
		o := h.o
		if h.raw {
			o.Result = observed(h.data, &d.obs)
		}
		d.done(h.s, &o)
		h.s, h.o = nil, Outcome{} // its data's buffer is kept for the next
	}
	d.held = d.held[:0]
}

// toolOutcome is what the runtime's tool call produced, as the detectors
// read it (res and err are what the call's path returned), with the
// observation of a result in *buf (kept there for the next one) when buf
// is not nil. With raw not nil, a success's data is copied into *raw
// instead (kept there for the next one), its Result left nil, and a
// failure's message is written there: the outcome then holds nothing of
// res.
func toolOutcome(res *records.Result, err error, buf, raw *[]byte) Outcome {
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
			if raw != nil {
				buf = raw
			}
			o.Result = appendText(buf, res.Error.Message)
		}
	default:
		if raw != nil {
			*raw = append((*raw)[:0], res.Data...)
			break
		}
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
