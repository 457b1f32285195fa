package reach

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/agentreach/reach/internal/records"
)

// past is what a restored request keeps of its PastRequest.
type past struct {
	once   sync.Once
	load   func() ([]PastFrame, []*PastRequest)
	usage  Usage
	parent string // the id of the request it was a sub-request of, if any
}

// RestorePast keeps p among the requests (Lookup, Requests): ended, in
// its state, with its usage, and its frames and sub-requests when they
// are first asked for. Every call made in it, like every frame, is
// refused: as request_ended, stopped_<mode> or request_interrupted. A
// request of p's id that this run keeps is left as it is, and returned.
func (rt *Runtime) RestorePast(p *PastRequest) *Request {
	return rt.requests.AddNew(rt.pastRequest(p, nil))
}

// pastRequest builds the request of p, a sub-request of parent if not nil.
func (rt *Runtime) pastRequest(p *PastRequest, parent *Request) *Request {
	o := RequestOptions{ID: p.ID, Principal: cmp.Or(p.Principal, "anonymous"), Tenant: p.Tenant, Roles: p.Roles,
		Attributes: p.Attributes, Agent: cmp.Or(p.Agent, "main"), Scene: p.Scene, Trace: p.Trace}
	r := rt.newRequest(context.Background(), o, p.Budget, parent, nil)
	r.started = p.Started
	r.ended.Store(true)
	r.past = &past{load: p.Load, usage: p.Usage, parent: p.Parent}
	r.meter.Restore(p.Usage)
	switch c, interrupted, stopped := p.End(); {
	case interrupted:
		r.interrupted = &c
		r.cancel(&InterruptedError{Cause: c})
	case stopped:
		r.mode.Store(int32(c.Mode))
		r.cause.Store(&c)
		r.cancel(&StopError{Cause: c})
	default:
		r.cancel(&StopError{Cause: c})
	}
	return r
}

// ParentID returns the id of the request r is a sub-request of, or "" for
// a root: its parent's, or, restored by its id alone (Lookup), the one its
// record names.
func (r *Request) ParentID() string {
	if r.parent != nil {
		return r.parent.id
	}
	if r.past != nil {
		return r.past.parent
	}
	return ""
}

// lineage reports whether id is r's or one of its ancestors'.
func (r *Request) lineage(id string) bool {
	for q := r; q != nil; q = q.parent {
		if q.id == id {
			return true
		}
	}
	return false
}

// loadPast reads a restored request's frames and sub-requests, once.
func (r *Request) loadPast() {
	p := r.past
	if p == nil || p.load == nil {
		return
	}
	p.once.Do(func() {
		frames, children := p.load()
		records.SortPast(frames) // a parent before its children: each is linked to the one built before it
		// Built without r.mu: a parent frame looked up in r's parent
		// (r.parent.Frame) and not found there is looked for in the
		// parent's sub-requests, r among them, which takes r.mu (a frame
		// its parent did not keep: a delegate frame cut off by a kill).
		built := make([]*Frame, 0, len(frames))
		byID := make(map[FrameID]*Frame, len(frames))
		for _, pf := range frames {
			f := &Frame{ID: pf.ID, Kind: pf.Kind, Name: pf.Name, Args: pf.Args, CallID: pf.CallID, Agent: pf.Agent,
				Request: r, Depth: pf.Depth, Started: pf.Started, ended: pf.Ended, err: pf.Error, tokens: pf.Tokens,
				why: pf.Why, summary: pf.Summary}
			f.setState(pf.State)
			if pf.Parent != 0 {
				if f.Parent = byID[pf.Parent]; f.Parent == nil && r.parent != nil {
					f.Parent, _ = r.parent.Frame(pf.Parent)
				}
			}
			byID[f.ID] = f
			built = append(built, f)
		}
		kids := make([]*Request, 0, len(children))
		for _, c := range children {
			if r.lineage(c.ID) {
				continue // edited records made a cycle: the tree would have no end
			}
			kids = append(kids, r.rt.pastRequest(c, r))
		}
		r.mu.Lock()
		// A call refused in it before this read (its frame kept in memory)
		// is read back too once its event is stored: shown once.
		built = slices.DeleteFunc(built, func(f *Frame) bool {
			return slices.ContainsFunc(r.frames, func(g *Frame) bool { return g.ID == f.ID })
		})
		r.frames = append(r.frames, built...)
		r.children = append(r.children, kids...)
		r.mu.Unlock()
	})
}
