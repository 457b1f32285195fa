package callgraph

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentreach/reach/internal/frames"
)

// Ancestor is a frame of a call's stack as another runtime needs it to
// check a call placed under it (a cycle, a broken reentrancy contract, the
// depth budget): who it is and the hashes of its tool and arguments (its
// Mark), not the arguments themselves.
type Ancestor struct {
	ID    frames.ID    `json:"id"`
	Kind  AncestorKind `json:"kind"`
	Name  string       `json:"name"`
	Agent string       `json:"agent,omitempty"`
	Depth int          `json:"depth,omitempty"`
	Hash  string       `json:"hash,omitempty"`  // the tool and its canonical arguments, 16 hex digits
	Keyed string       `json:"keyed,omitempty"` // a keyed tool and its key's values
	// Endpoint is a hand-off's: where its agent is reached (Mark.Endpoint).
	Endpoint string       `json:"endpoint,omitempty"`
	Filter   [4]uint64    `json:"filter,omitzero"` // the hashes of the stack, this frame included
	State    frames.State `json:"state"`
}

// AncestorKind is an ancestor's frame kind, written by name in JSON.
type AncestorKind frames.Kind

// MarshalJSON writes the kind by name.
func (k AncestorKind) MarshalJSON() ([]byte, error) { return json.Marshal(frames.Kind(k).String()) }

// UnmarshalJSON reads a kind's name.
func (k *AncestorKind) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	for _, v := range []frames.Kind{frames.Tool, frames.Model, frames.Delegate} {
		if v.String() == s {
			*k = AncestorKind(v)
			return nil
		}
	}
	return fmt.Errorf("unknown frame kind %q", s)
}

// SetMark writes m's hashes and filter into a.
func (a *Ancestor) SetMark(m *Mark) {
	a.Filter = m.Filter
	if m.Hash != 0 {
		a.Hash = fmt.Sprintf("%016x", uint64(m.Hash))
	}
	if m.Keyed != 0 {
		a.Keyed = fmt.Sprintf("%016x", uint64(m.Keyed))
	}
	if m.Endpoint != 0 {
		a.Endpoint = fmt.Sprintf("%016x", uint64(m.Endpoint))
	}
}

// Mark reads a's hashes and filter back, adopted: a frame of another
// runtime's stack, compared by hashes alone.
func (a *Ancestor) Mark() (Mark, error) {
	m := Mark{Filter: a.Filter, Adopted: true}
	var err error
	if m.Hash, err = parseHash(a.Hash); err == nil {
		if m.Keyed, err = parseHash(a.Keyed); err == nil {
			m.Endpoint, err = parseHash(a.Endpoint)
		}
	}
	return m, err
}

func parseHash(s string) (Hash, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("adopting an ancestry: hash %q: %w", s, err)
	}
	return Hash(v), nil
}
