package effects

import (
	"fmt"
	"strings"

	"github.com/agentreach/reach/internal/fault"
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
