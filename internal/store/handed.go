package store

import (
	"context"
	"slices"
	"time"
)

// PutHandedTasks implements HandedTasks.
func (m *Memory) PutHandedTasks(ctx context.Context, ts []*HandedTask, most int) error {
	if len(ts) == 0 {
		return nil
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	created := Round(ts[0].Created)
	m.handed = slices.DeleteFunc(m.handed, func(h *HandedTask) bool {
		if !h.Expires.After(created) {
			return true
		}
		for _, t := range ts {
			if h.Digest == t.Digest && h.Request == t.Request && (h.Nth == t.Nth || h.Frame != t.Frame) {
				return true
			}
		}
		return false
	})
	for _, t := range ts {
		c := *t
		c.Created, c.Expires, c.Stack, c.Sub, c.used = created, Round(t.Expires), slices.Clone(t.Stack), "", false
		m.handed = append(m.handed, &c)
	}
	// The principal's past the newest most go, the oldest first (m.handed
	// is in the order they were put).
	p, tn := ts[0].Principal, ts[0].Tenant
	n := 0
	for _, h := range m.handed {
		if h.Principal == p && h.Tenant == tn {
			n++
		}
	}
	m.handed = slices.DeleteFunc(m.handed, func(h *HandedTask) bool {
		if n > most && h.Principal == p && h.Tenant == tn {
			n--
			return true
		}
		return false
	})
	return nil
}

// HandedTasks implements HandedTasks.
func (m *Memory) HandedTasks(ctx context.Context, principal, tenant, digest string, at time.Time) ([]*HandedTask, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []*HandedTask
	for _, h := range slices.Backward(m.handed) {
		if h.Digest == digest && h.Principal == principal && h.Tenant == tenant && h.Expires.After(at) && len(out) < MaxHandedRead &&
			m.requests[h.Request] != nil && m.requests[h.Request].State == "running" {
			c := *h
			c.Stack = slices.Clone(h.Stack)
			out = append(out, &c)
		}
	}
	return out, nil
}

// liveHanded returns the records of digest held by principal and tenant that
// have not expired at at, whose request is running. m.mu is held.
func (m *Memory) liveHanded(principal, tenant, digest string, at time.Time) []*HandedTask {
	var out []*HandedTask
	for _, h := range m.handed {
		if h.Digest == digest && h.Principal == principal && h.Tenant == tenant && h.Expires.After(at) &&
			m.requests[h.Request] != nil && m.requests[h.Request].State == "running" {
			out = append(out, h)
		}
	}
	return out
}

// ClaimHandedTask implements HandedTasks.
func (m *Memory) ClaimHandedTask(ctx context.Context, principal, tenant, digest string, at time.Time) (*HandedTask, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	live := m.liveHanded(principal, tenant, digest, at)
	// The request: the one whose turn handed it, else the one whose
	// records are not all used yet.
	var req string
	reqs, waiting := map[string]bool{}, map[string]bool{}
	for _, h := range live {
		reqs[h.Request] = true
		if !h.used {
			waiting[h.Request] = true
		}
	}
	switch {
	case len(reqs) == 1:
		req = live[0].Request
	case len(waiting) == 1:
		for r := range waiting {
			req = r
		}
	default:
		return nil, nil // several wait, or none: no guess
	}
	// Its record not used yet of the lowest Nth, else its Nth 0.
	var pick *HandedTask
	for _, h := range live {
		if h.Request == req && (pick == nil || h.used == pick.used && h.Nth < pick.Nth || pick.used && !h.used) {
			pick = h
		}
	}
	pick.used = true
	c := *pick
	c.Stack = slices.Clone(pick.Stack)
	return &c, nil
}

// SetHandedSub implements HandedTasks.
func (m *Memory) SetHandedSub(ctx context.Context, digest, request string, nth int, prev, sub string) (bool, error) {
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	for _, h := range m.handed {
		if h.Digest == digest && h.Request == request && h.Nth == nth && h.Sub == prev {
			h.Sub = sub
			return true, nil
		}
	}
	return false, nil
}

// HandedSubs implements HandedTasks.
func (m *Memory) HandedSubs(ctx context.Context, request, frame string) ([]string, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []string
	for _, h := range m.handed {
		if h.Request == request && h.Frame == frame && h.Sub != "" {
			out = append(out, h.Sub)
		}
	}
	return out, nil
}

// MaxHandedRead is how many records HandedTasks returns at most.
const MaxHandedRead = 8
