package entities

import (
	"fmt"
	"strings"

	"github.com/agentreach/reach/internal/fault"
)

// Refusal is the state stage's refusal of a write that would close d:
// request is the id of the request whose call holds the entity ("" for
// one of another principal, which is not named), call that call's name,
// and same says the write is that request's too.
func (d *Deadlock[F, R]) Refusal(same bool, request, call string) *fault.Error {
	e, w := d.shown()
	msg := fmt.Sprintf("Writing %s would deadlock: request %s holds it and waits for %s, which this request holds.",
		Words(e), request, Words(w))
	if request == "" && !same {
		msg = fmt.Sprintf("Writing %s would deadlock: a request of another principal holds it and waits for %s, which this request holds.",
			Words(e), Words(w))
	}
	if same {
		msg = fmt.Sprintf("Writing %s would deadlock: %s, another call of request %s, holds it and waits for %s, which this call holds.",
			Words(e), call, request, Words(w))
	}
	return &fault.Error{Guard: "state", Type: fault.TypeState, Code: "deadlock", Message: msg,
		Suggestion: "Finish or undo what this request holds, then try again; do not nest writes to these entities."}
}

// StaleRead is the state stage's refusal of a write based on a read of the
// entity n (as it may be shown: Holder.Show) at version seen, which is at
// version now.
func StaleRead(n string, seen, now uint64) *fault.Error {
	w := Words(n)
	if w != "" {
		w = strings.ToUpper(w[:1]) + w[1:]
	}
	return &fault.Error{Guard: "state", Type: fault.TypeState, Code: "stale_read",
		Message:    fmt.Sprintf("%s changed since you read it (v%d -> v%d).", w, seen, now),
		Suggestion: "Read it again, then decide whether this write is still right."}
}
