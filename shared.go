package reach

import (
	"errors"
	"time"
)

// What a runtime needs to share its requests with other runtimes that keep
// their state in one store (several gateway instances, internal/cluster):
// a request begun by one is joined by another as it was begun, a stop
// recorded elsewhere is applied here, and a call placed under a frame of
// another runtime sees that frame's ancestors.

// StopWith stops the request with a cause recorded elsewhere (another
// runtime's stop of it, read from the store it shares): as Stop, but the
// cause is kept as given: who, why, when, the budget that ran out.
func (r *Request) StopWith(c Cause) {
	c.Reason = r.rt.opts.Redactor.RedactString(c.Reason)
	if c.Request == "" {
		c.Request = r.id
	}
	if c.At.IsZero() {
		c.At = time.Now()
	}
	r.stop(c)
}

// KeptEnded returns request id if this runtime keeps it ended, not
// stopped, and of this run (its part here is over: several runtimes run
// parts of one request), or nil. It does not ask Options.History.
func (rt *Runtime) KeptEnded(id string) *Request {
	r, ok := rt.requests.Get(id)
	if !ok || !r.ended.Load() || r.past != nil || r.interrupted != nil || StopMode(r.mode.Load()) != Running {
		return nil
	}
	return r
}

// NoteStop records on a request whose part here ended (KeptEnded) a stop
// that another runtime applied to it later, with its cause as that one
// recorded it (who, why, when): the request's state and StopCause, and
// its sub-requests', become the stop's, so that this runtime's views show
// it stopped as the others do, not completed. Nothing else happens here:
// its part is over, so no undo runs and the stop is not recorded again. It
// reports whether it noted the stop: not on a running request (StopWith
// stops those), nor on one stopped already as strongly.
func (r *Request) NoteStop(c Cause) bool {
	if !r.ended.Load() || r.past != nil || r.interrupted != nil {
		return false
	}
	c.Reason = r.rt.opts.Redactor.RedactString(c.Reason)
	if c.Request == "" {
		c.Request = r.id
	}
	if _, ok := r.mark(c); !ok {
		return false
	}
	for _, ch := range r.Children() {
		ch.NoteStop(c)
	}
	return true
}

// Ancestry returns f and its ancestors, innermost first, as another
// runtime needs them (AdoptAncestry).
func (f *Frame) Ancestry() []Ancestor {
	var out []Ancestor
	for a := f; a != nil; a = a.Parent {
		an := Ancestor{ID: a.ID, Kind: AncestorKind(a.Kind), Name: a.Name, Agent: a.Agent, Depth: a.Depth, State: a.State()}
		an.SetMark(&a.mark)
		out = append(out, an)
	}
	return out
}

// AdoptAncestry makes, in request r, the frames of a stack that another
// runtime runs (innermost first, as Ancestry returns it), and returns the
// innermost: a call placed under it (WithParent) is checked against them
// as against its own ancestors: a call of the same tool with the same
// arguments is a cycle, a non-reentrant tool on them is a re-entry, and
// their depth counts. They compare by the hashes of their arguments, which
// they do not keep, and are not among r's frames.
func (rt *Runtime) AdoptAncestry(r *Request, stack []Ancestor) (*Frame, error) {
	if r == nil || len(stack) == 0 {
		return nil, errors.New("adopting an ancestry: a request and a stack are needed")
	}
	var parent *Frame
	for i := len(stack) - 1; i >= 0; i-- {
		a := stack[i]
		if a.ID == 0 {
			return nil, errors.New("adopting an ancestry: a frame without an id")
		}
		m, err := a.Mark()
		if err != nil {
			return nil, err
		}
		f := &Frame{ID: a.ID, Kind: FrameKind(a.Kind), Name: a.Name, Agent: a.Agent, Depth: a.Depth, Parent: parent, Request: r, mark: m}
		f.setState(a.State)
		if parent != nil {
			// A filter holds its ancestors' hashes: never fewer than theirs.
			for j := range f.mark.Filter {
				f.mark.Filter[j] |= parent.mark.Filter[j]
			}
		}
		parent = f
	}
	return parent, nil
}
