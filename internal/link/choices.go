package link

import (
	"slices"
	"sync"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// ModelChoices maps the ids of the tool calls models chose (through the model
// proxy) to their model frames, keeping the newest 10,000 ids, so that a
// call the agent then sends with that id (call_id, or "reach/call_id"
// _meta) becomes the model frame's child. Model endpoints do not promise
// ids unique across conversations ("call_0" each time, say), so an id
// keeps the newest frame of each request whose model chose it (a few at
// most): a call that names its request links within it; one that names
// none links only if one running request's model chose that id, so that
// one agent's call never runs in another's request. The zero ModelChoices is
// ready; its methods are safe for concurrent use.
type ModelChoices struct {
	mu    sync.Mutex
	max   int
	m     map[string][]*reach.Frame
	order []string
}

// maxChosenPerID bounds the requests remembered for one tool call id.
const maxChosenPerID = 8

// Record records that the model turn f chose the tool call id.
func (c *ModelChoices) Record(id string, f *reach.Frame) {
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string][]*reach.Frame{}
		if c.max == 0 {
			c.max = 10000
		}
	}
	fs, ok := c.m[id]
	if !ok {
		c.order = append(c.order, id)
	}
	fs = slices.DeleteFunc(fs, func(o *reach.Frame) bool {
		return o.Request == f.Request || o.Request.Root().State() != reach.RequestRunning
	})
	if len(fs) >= maxChosenPerID {
		fs = fs[1:]
	}
	c.m[id] = append(fs, f)
	for len(c.order) > c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

// Turn returns the model turn that chose call id for a caller who: within
// the running request named (or one under it), else the one running
// request's; only a request who owns counts (CheckOwner).
func (c *ModelChoices) Turn(id, request string, who *auth.Identity) *reach.Frame {
	if id == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fs := c.m[id]
	var found *reach.Frame
	for i := len(fs) - 1; i >= 0; i-- {
		f := fs[i]
		if f.Request.Root().State() != reach.RequestRunning || CheckOwner(who, f.Request) != nil {
			continue
		}
		if request != "" {
			if (Target{Request: request, ModelTurn: f}).modelTurn() != nil {
				return f
			}
			continue
		}
		if found != nil {
			return nil // two running requests' models chose it
		}
		found = f
	}
	return found
}
