// Package frames names the parts of a frame of a request's call graph as
// every surface writes them: its id (also its W3C span id, 16 hex digits),
// its kind, and the states of the call path (R5) with their stable names.
// Package reach re-exports them (reach.FrameID, reach.FrameKind,
// reach.State); this room only names.
package frames

import (
	"strconv"

	"github.com/agentreach/reach/internal/enumtext"
)

// Kind says what a frame is.
type Kind int8

// Frame kinds: a tool call, a model call, a hand-off to an agent.
const (
	Tool Kind = iota
	Model
	Delegate
)

func (k Kind) String() string {
	switch k {
	case Model:
		return "model"
	case Delegate:
		return "delegate"
	}
	return "tool"
}

// State is where a call is on its path (R5).
type State int32

// States, in path order.
const (
	Selected State = iota
	Validating
	Authorizing
	AwaitingApproval
	Executing
	Completed
	Failed
	Refused
	Cancelled
)

var stateNames = []string{"selected", "validating", "authorizing", "awaiting_approval", "executing", "completed", "failed", "refused", "cancelled"}

func (s State) String() string { return enumtext.Name(stateNames, s) }

// MarshalText writes the state's name.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name.
func (s *State) UnmarshalText(b []byte) error {
	v, err := enumtext.Parse[State](stateNames, b, "state")
	if err == nil {
		*s = v
	}
	return err
}

// Done reports whether the state is final.
func (s State) Done() bool { return s >= Completed }

// ID identifies a frame. It is also the span id of the frame's span
// in W3C trace context, written as 16 hex digits.
type ID uint64

func (id ID) String() string {
	b := id.Hex()
	return string(b[:])
}

// Hex is the id's 16 hex digits, String's text without its allocation.
func (id ID) Hex() (b [16]byte) {
	const hex = "0123456789abcdef"
	for i := 15; i >= 0; i-- {
		b[i] = hex[id&15]
		id >>= 4
	}
	return b
}

// MarshalText writes the id as 16 hex digits.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// AppendText appends the id's 16 hex digits to b (encoding.TextAppender):
// MarshalText's text without its allocation.
func (id ID) AppendText(b []byte) ([]byte, error) {
	h := id.Hex()
	return append(b, h[:]...), nil
}

// UnmarshalText reads 16 hex digits.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	*id = v
	return err
}

// Parse reads 16 hex digits.
func Parse(s string) (ID, error) {
	v, err := strconv.ParseUint(s, 16, 64)
	return ID(v), err
}
