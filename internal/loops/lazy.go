package loops

import (
	"sync"
	"sync/atomic"

	"github.com/agentreach/reach/internal/fault"
)

// Lazy is the Detector of a request tree, made when it is first asked
// for: the root request and its sub-requests share one, so a livelock
// between agents is seen whole. The zero Lazy is ready; safe for
// concurrent use.
type Lazy struct {
	d        atomic.Pointer[Detector]
	mu       sync.Mutex // making or releasing d
	released bool       // on mu
}

// Get returns the tree's Detector, made with opts the first time. After
// Release it returns nil: the tree ended, and a step that reaches its
// guard after that (admitted before the end, as a stop reached it) is not
// judged afresh by an empty Detector, whose verdict would say nothing of
// the tree, but refused by its caller as its request now stands (stopped,
// ended). Before, Get made it a new Detector each time.
func (l *Lazy) Get(opts *Options) *Detector {
	if d := l.d.Load(); d != nil {
		return d
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := l.d.Load(); d != nil || l.released {
		return d
	}
	d := New(opts)
	l.d.Store(d)
	return d
}

// Release lets the tree's Detector go: the tree ended, and no step of it
// will be judged again (an ended request refuses new frames). A runtime
// keeps its ended requests for a while, for their views; their detectors'
// state (every agent's recent calls, answers and questions) was most of
// what each kept, and under clients that make a request a call (a
// sessionless client's concurrent calls) it held the GC to a heap a
// third larger. A step that was running when the tree ended tells its
// outcome to no detector (Live is nil): the one that admitted it is let
// go, and a new one made for it would hold none of the state the step
// points into (its agent's ring), which other late steps' reports to
// their own new detectors would write at once.
func (l *Lazy) Release() {
	l.mu.Lock()
	l.released = true
	l.d.Store(nil)
	l.mu.Unlock()
}

// Live returns the tree's Detector, for a step it admitted to report its
// outcome to, or nil once it was let go (Release) or if none was made. It
// never makes one.
func (l *Lazy) Live() *Detector {
	return l.d.Load()
}

// Released reports whether Release was called.
func (l *Lazy) Released() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.released
}

// Refusal is the loop guard's refusal of the step v judged (code
// loop_<detector>).
func (v *Verdict) Refusal() *fault.Error {
	return &fault.Error{Guard: "loops", Type: fault.TypeLoop, Code: "loop_" + v.Detector, Message: v.Message, Suggestion: v.Suggestion}
}
