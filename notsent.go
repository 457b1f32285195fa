package reach

// NotSentError is a tool's error for a call refused before any of it was
// sent to the tool: a gateway instance's lease, checked again just before
// an upstream's request is written (internal/cluster, mcpwire's
// WithBeforeSend). The call is answered with Err at once: it is not
// retried, not counted as the tool's failure by the circuit breakers, and
// not taken for a call its tool began (an approved call held back is not
// recorded as cut off while it ran: its client may send it again).
type NotSentError struct{ Err error }

func (e *NotSentError) Error() string { return e.Err.Error() }
func (e *NotSentError) Unwrap() error { return e.Err }
