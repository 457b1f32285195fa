package gateway

import "fmt"

// notReady says why the gateway should get no traffic now, for /readyz
// (httpapi): it shuts down, another process took its instance's name, the
// store (PostgreSQL) failed its last heartbeat, the store (SQLite) failed
// its last write or its file is gone, or an upstream marked required: true
// is not connected.
func (g *Gateway) notReady() []string {
	var why []string
	if g.draining.Load() {
		why = append(why, "shutting down")
	}
	if g.cluster != nil {
		select {
		case <-g.cluster.Lost():
			why = append(why, "another process took this instance's name on the store")
		default:
		}
		if why1 := g.dead(); why1 != "" {
			why = append(why, why1)
		} else if g.cluster.StoreDown() {
			why = append(why, "the store does not answer: every call is refused store_unavailable until it does")
		}
	}
	if u, ok := g.store.(interface{ Unready() string }); ok {
		if s := u.Unready(); s != "" {
			why = append(why, s)
		}
	}
	required := map[string]bool{}
	for _, u := range g.cfg.Upstreams {
		if u.Required {
			required[u.Name] = true
		}
	}
	for _, u := range g.Upstreams() {
		if required[u.Name] && !u.Connected {
			why = append(why, fmt.Sprintf("required upstream %s is not connected", u.Name))
		}
	}
	return why
}

// dead says why only a restart brings this instance back: the other
// instances took its life for dead and recovered its work, so it admits no
// more (docs/INSTANCES.md, "An instance frozen past instance_ttl"); "" while
// it is alive. /livez answers 503 with it, so a supervisor restarts it.
func (g *Gateway) dead() string {
	if g.cluster == nil || !g.cluster.Fenced() {
		return ""
	}
	return "the other instances took this instance for dead and recovered its work: restart reach serve"
}
