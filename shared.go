package reach

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentreach/reach/internal/callgraph"
)

// What a runtime needs to share its requests with other runtimes that keep
// their state in one store (several gateway instances, internal/cluster):
// a request begun by one is joined by another as it was begun, a stop
// recorded elsewhere is applied here, and a call placed under a frame of
// another runtime sees that frame's ancestors.

// RequestJoiner is a RequestRecorder whose requests other runtimes may run
// too. Begin asks it, for a root request, before the request is made:
// JoinRequest records the request as begun, or, when another runtime runs
// a request of that id, sets o to that request as it was begun (its
// principal, tenant, roles, attributes, agent, scene, budget and trace) and
// returns when it began, so that both count one budget and one wall clock.
// An error refuses the Begin, as RequestBegan's does (an *InterruptedError
// or a *StopError for an id that starts no new work). RequestBegan is still
// called once the request is made.
type RequestJoiner interface {
	JoinRequest(ctx context.Context, o *RequestOptions) (began time.Time, err error)
}

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

// Ancestor is a frame of a call's stack as another runtime needs it to
// check a call placed under it (a cycle, a broken reentrancy contract, the
// depth budget): who it is and the hashes of its tool and arguments, not
// the arguments themselves.
type Ancestor struct {
	ID     FrameID      `json:"id"`
	Kind   AncestorKind `json:"kind"`
	Name   string       `json:"name"`
	Agent  string       `json:"agent,omitempty"`
	Depth  int          `json:"depth,omitempty"`
	Hash   string       `json:"hash,omitempty"`  // the tool and its canonical arguments, 16 hex digits
	Keyed  string       `json:"keyed,omitempty"` // a keyed tool and its key's values
	Filter [4]uint64    `json:"filter,omitzero"` // the hashes of the stack, this frame included
	State  State        `json:"state"`
}

// AncestorKind is an ancestor's FrameKind, written by name in JSON.
type AncestorKind FrameKind

// MarshalJSON writes the kind by name.
func (k AncestorKind) MarshalJSON() ([]byte, error) { return json.Marshal(FrameKind(k).String()) }

// UnmarshalJSON reads a kind's name.
func (k *AncestorKind) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	switch s {
	case "tool":
		*k = AncestorKind(ToolFrame)
	case "model":
		*k = AncestorKind(ModelFrame)
	case "delegate":
		*k = AncestorKind(DelegateFrame)
	default:
		return fmt.Errorf("unknown frame kind %q", s)
	}
	return nil
}

// Ancestry returns f and its ancestors, innermost first, as another
// runtime needs them (AdoptAncestry).
func (f *Frame) Ancestry() []Ancestor {
	var out []Ancestor
	for a := f; a != nil; a = a.Parent {
		an := Ancestor{ID: a.ID, Kind: AncestorKind(a.Kind), Name: a.Name, Agent: a.Agent, Depth: a.Depth, Filter: a.mark.Filter, State: a.State()}
		if a.mark.Hash != 0 {
			an.Hash = hashHex(a.mark.Hash)
		}
		if a.mark.Keyed != 0 {
			an.Keyed = hashHex(a.mark.Keyed)
		}
		out = append(out, an)
	}
	return out
}

func hashHex(h callgraph.Hash) string { return fmt.Sprintf("%016x", uint64(h)) }

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
		f := &Frame{ID: a.ID, Kind: FrameKind(a.Kind), Name: a.Name, Agent: a.Agent, Depth: a.Depth, Parent: parent, Request: r,
			mark: callgraph.Mark{Filter: a.Filter, Adopted: true}}
		var err error
		if f.mark.Hash, err = parseHash(a.Hash); err != nil {
			return nil, err
		}
		if f.mark.Keyed, err = parseHash(a.Keyed); err != nil {
			return nil, err
		}
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

func parseHash(s string) (callgraph.Hash, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("adopting an ancestry: hash %q: %w", s, err)
	}
	return callgraph.Hash(v), nil
}
