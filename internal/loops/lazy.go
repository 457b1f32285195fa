package loops

import (
	"sync"

	"github.com/agentreach/reach/internal/fault"
)

// Lazy is the Detector of a request tree, made when it is first asked
// for: the root request and its sub-requests share one, so a livelock
// between agents is seen whole. The zero Lazy is ready; safe for
// concurrent use.
type Lazy struct {
	once sync.Once
	d    *Detector
}

// Get returns the tree's Detector, made with opts the first time.
func (l *Lazy) Get(opts *Options) *Detector {
	l.once.Do(func() { l.d = New(opts) })
	return l.d
}

// Refusal is the loop guard's refusal of the step v judged (code
// loop_<detector>).
func (v *Verdict) Refusal() *fault.Error {
	return &fault.Error{Guard: "loops", Type: fault.TypeLoop, Code: "loop_" + v.Detector, Message: v.Message, Suggestion: v.Suggestion}
}
