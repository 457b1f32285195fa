package reach

import "github.com/agentreach/reach/internal/ratelimit"

// newLimiter makes the token buckets of o (nil: no limit).
func newLimiter(o *RateLimit) *ratelimit.Limiter {
	if o == nil {
		return ratelimit.New(ratelimit.Limits{})
	}
	return ratelimit.New(ratelimit.Limits{PerSecond: o.PerSecond, Burst: o.Burst, PerPrincipal: o.PerPrincipal,
		PerPrincipalBurst: o.PerPrincipalBurst, MaxPrincipals: o.MaxPrincipalsKnown, Reserved: o.Reserved})
}
