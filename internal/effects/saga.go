package effects

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/frames"
)

// Compensation reports one undo that ran.
type Compensation struct {
	Tool       string `json:"tool"`
	Undoes     string `json:"undoes"`
	OK         bool   `json:"ok"`
	DeadLetter string `json:"dead_letter,omitempty"`
}

// CompensationNote is the note a call's result carries of the undos its
// failure (or its request's stop) ran, newest first.
func CompensationNote(done []Compensation) string {
	var parts []string
	for _, d := range done {
		s := d.Tool + " (undoing " + d.Undoes + ")"
		if !d.OK {
			s += " FAILED and is queued for an operator as dead letter " + d.DeadLetter
		}
		parts = append(parts, s)
	}
	return "the request's earlier writes were compensated, newest first: " + strings.Join(parts, "; ")
}

const notDone = "Treat the write as not done; its effects are being undone. Tell the user, or try another way."

// CheckFailed is the error of the write tool whose verify call check
// failed, with msg.
func CheckFailed(tool, check, msg string) *fault.Error {
	return &fault.Error{Guard: "verify", Type: fault.TypeTool, Code: "verify_failed",
		Message:    fmt.Sprintf("%s reported success, but its check %s failed: %s", tool, check, msg),
		Suggestion: notDone}
}

// NotConfirmed is the error of the write tool whose verify call check
// returned got (a preview), which the condition cond does not confirm:
// why, as Contract.Confirms says it.
func NotConfirmed(tool, check, cond, why, got string) *fault.Error {
	return &fault.Error{Guard: "verify", Type: fault.TypeTool, Code: "verify_failed",
		Message: fmt.Sprintf("%s reported success, but the check %s does not confirm it (%s: %s; the check returned %s). This is a silent failure.",
			tool, check, cond, why, got),
		Suggestion: notDone}
}

// Undo is a registered compensation: the undo call of a write that
// succeeded, ready to run.
type Undo struct {
	Tool   string
	Args   json.RawMessage
	Key    string    // its idempotency key
	Origin string    // the call it undoes, as a note names it
	Frame  frames.ID // the frame of the call it undoes
}

// Saga is a request's stack of undos (S1), newest last. Safe for
// concurrent use; the zero Saga is empty.
type Saga struct {
	mu    sync.Mutex
	undos []Undo
}

// Push registers u.
func (s *Saga) Push(u Undo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.undos = append(s.undos, u)
}

// Len returns how many undos are registered.
func (s *Saga) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.undos)
}

// Since returns the undo registered for frame after the first n.
func (s *Saga) Since(n int, frame frames.ID) (Undo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.undos) - 1; i >= n && i >= 0; i-- {
		if s.undos[i].Frame == frame {
			return s.undos[i], true
		}
	}
	return Undo{}, false
}

// Take empties the saga and returns its undos, oldest first: they run
// newest first.
func (s *Saga) Take() []Undo {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.undos
	s.undos = nil
	return u
}
