package cluster

import "time"

// LeaseLeft is how long this life may still act (Leased) without another
// heartbeat the store accepts: > 0 while it holds its lease, <= 0 once it
// lapsed. For /readyz's text: after a failed heartbeat, calls are still
// admitted until then. An atomic load and a monotonic clock read.
func (c *Cluster) LeaseLeft() time.Duration {
	return time.Duration(c.lease.Load()) - time.Since(c.base)
}
