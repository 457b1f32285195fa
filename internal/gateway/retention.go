package gateway

import "github.com/agentreach/reach/internal/store"

// startRetention runs the store's retention sweep (the configuration's
// retention; docs/STATE.md, "Retention") in the background: once now and
// then every hour, until the gateway closes. On PostgreSQL every instance
// runs it; one batch of one instance at a time deletes (the sweep's
// advisory lock).
func (g *Gateway) startRetention() {
	r, ok := g.store.(store.Retention)
	keep := g.cfg.RetentionPeriod()
	if !ok || keep <= 0 {
		return
	}
	log := g.log.With("component", "retention")
	g.Go(func() { store.RunRetention(g.ctx, r, store.RetentionOptions{Keep: keep, Logger: log}) })
}
