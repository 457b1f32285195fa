package cluster

import (
	"context"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/durable"
)

// unstoredStop is a stop applied to this instance's part of a request
// that the store did not take (it was down, or the connection cut): the
// other instances' parts run on until it is stored. ended is set once the
// part ended meanwhile: its leave waits for the stop (Recorder.RequestEnded).
type unstoredStop struct {
	r     *Recorder
	q     *reach.Request
	cause reach.Cause
	ended bool
}

// keepStop keeps q's stop, which the store did not take, to store it again
// after the next heartbeat the store takes (storeStops). A stronger stop
// kept before stays. The stop is in the stops file before it is kept in
// memory, so before the store is asked for it again (storeStops), and the
// file goes only once no stop is kept (unfileStops, which waits for
// fileMu). The file is written holding fileMu, not c.mu: the paths of
// the running requests take c.mu, and are busiest during the store
// outage that makes stops kept.
func (c *Cluster) keepStop(r *Recorder, q *reach.Request, cause reach.Cause) {
	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	c.mu.Lock()
	u := c.unstored[q.ID()]
	kept := u != nil && u.cause.Mode >= cause.Mode
	c.mu.Unlock()
	if kept {
		return // as strong a stop is kept, and filed: keepStop alone changes a kept cause, holding fileMu
	}
	c.fileStop(q.ID(), cause)
	c.mu.Lock()
	defer c.mu.Unlock()
	if u := c.unstored[q.ID()]; u != nil {
		if u.cause.Mode < cause.Mode {
			u.cause = cause
		}
		return
	}
	c.unstored[q.ID()] = &unstoredStop{r: r, q: q, cause: cause}
}

// storedStop drops the kept stop of request id once a stop at least as
// strong was stored.
func (c *Cluster) storedStop(id string, mode reach.StopMode) {
	c.mu.Lock()
	u := c.unstored[id]
	dropped := u != nil && u.cause.Mode <= mode
	if dropped {
		delete(c.unstored, id)
	}
	c.mu.Unlock()
	if dropped {
		c.unfileStops()
	}
}

// deferLeave reports whether q's part must wait for its stop to be stored
// before it leaves: then the leave is made once it is (storeStops).
func (c *Cluster) deferLeave(q *reach.Request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.unstored[q.ID()]
	if u == nil || u.q != q {
		return false
	}
	u.ended = true
	return true
}

// storeStops stores the kept stops again; each stored is recorded as
// RequestStopped records one, and the part that ended meanwhile leaves
// its request. Those the store does not take are tried again after the
// next heartbeat.
func (c *Cluster) storeStops(ctx context.Context) {
	c.mu.Lock()
	var us []*unstoredStop
	for _, u := range c.unstored {
		us = append(us, u)
	}
	c.mu.Unlock()
	c.storeFiled(ctx)
	for _, u := range us {
		c.mu.Lock()
		cause := u.cause
		c.mu.Unlock()
		if _, err := c.st.StopRequest(ctx, u.q.ID(), int(cause.Mode), durable.EncodeCause(cause)); err != nil {
			c.log.Warn("cluster: storing a stop again failed; tried again after the next heartbeat", "request", u.q.ID(), "err", err)
			continue
		}
		c.mu.Lock()
		ended := u.ended
		dropped := c.unstored[u.q.ID()] == u && u.cause.Mode <= cause.Mode
		if dropped {
			delete(c.unstored, u.q.ID())
		} else {
			ended = false // a stronger stop came meanwhile: stored next time, and then the part leaves
		}
		c.mu.Unlock()
		if dropped {
			c.unfileStops()
		}
		c.log.Info("cluster: a stop the store had not taken is stored", "request", u.q.ID())
		crashpoint.Reached("request.stopped")
		u.r.Stopped(ctx, u.q)
		if ended {
			u.r.RequestEnded(ctx, u.q)
		}
	}
}

// unleftPart is this instance's part of a request that ended here, whose
// leave the store did not take.
type unleftPart struct {
	r *Recorder
	q *reach.Request
}

// keepLeave keeps q's part, whose leave the store did not take, to leave
// it again after the next heartbeat the store takes (leaveAgain).
func (c *Cluster) keepLeave(r *Recorder, q *reach.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unleft[q.ID()] = &unleftPart{r: r, q: q}
}

// leaveAgain leaves again the parts kept by keepLeave, as
// Recorder.RequestEnded leaves a part, each while a join of its request
// waits (as for a stray part: leaveStrays); those the store does not take
// are kept again. One whose request runs here again (a new part, joined
// since) is dropped: that part leaves when it ends.
func (c *Cluster) leaveAgain(ctx context.Context) {
	c.mu.Lock()
	var us []*unleftPart
	for id, u := range c.unleft {
		switch {
		case c.local[id] != nil:
			delete(c.unleft, id)
		case c.joins[id] == 0 && c.leaving[id] == nil:
			delete(c.unleft, id)
			c.leaving[id] = make(chan struct{})
			us = append(us, u)
		}
	}
	c.mu.Unlock()
	for _, u := range us {
		u.r.RequestEnded(ctx, u.q) // kept again if it fails
		c.mu.Lock()
		close(c.leaving[u.q.ID()])
		delete(c.leaving, u.q.ID())
		c.mu.Unlock()
	}
}

// storeStopsApart runs storeStops, then leaveAgain, on a goroutine of its
// own, one at a time, as leaveStraysApart does: the heartbeat does not
// wait for it.
func (c *Cluster) storeStopsApart(ctx context.Context) {
	c.mu.Lock()
	n := len(c.unstored) + len(c.unleft) + len(c.filed)
	c.mu.Unlock()
	if n == 0 || !c.storing.CompareAndSwap(false, true) {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.storing.Store(false)
		sctx, cancel := context.WithTimeout(ctx, c.ttl)
		defer cancel()
		c.storeStops(sctx)
		c.leaveAgain(sctx)
	}()
}
