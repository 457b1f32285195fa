package retry

import "time"

// Policy says how a tool's transient failures are retried (R6).
type Policy struct {
	Attempts int           // total attempts including the first; if zero, 3
	Base     time.Duration // first backoff; if zero, 100ms; doubles each retry
	Max      time.Duration // cap on one backoff; if zero, 5s
}

// Resolve returns p with the default of each zero field (all of them for a
// nil p).
func (p *Policy) Resolve() Policy {
	r := Policy{Attempts: 3, Base: 100 * time.Millisecond, Max: 5 * time.Second}
	if p != nil {
		if p.Attempts > 0 {
			r.Attempts = p.Attempts
		}
		if p.Base > 0 {
			r.Base = p.Base
		}
		if p.Max > 0 {
			r.Max = p.Max
		}
	}
	return r
}
