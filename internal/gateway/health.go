package gateway

import (
	"fmt"
	"time"
)

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
			why = append(why, storeDown(g.cluster.LeaseLeft(), time.Now()))
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
		switch {
		case required[u.Name] && !u.Connected:
			why = append(why, fmt.Sprintf("required upstream %s is not connected", u.Name))
		case required[u.Name] && u.Error != "":
			why = append(why, fmt.Sprintf("required upstream %s is connected but its tools could not be listed", u.Name))
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

// storeDown is /readyz's reason while the store (PostgreSQL) fails this
// life's heartbeats, left its lease's time left, now the time. Until the
// lease lapses, calls are still admitted: they run where the store takes
// their writes, and while it does not answer each is refused where it
// must write to it (a request begun, a call's checkpoint or claim:
// nothing runs). From then on every call is refused.
func storeDown(left time.Duration, now time.Time) string {
	if left > 0 {
		return fmt.Sprintf("the store does not answer (this instance's last heartbeat failed): calls are still admitted until its lease lapses, in %s (at %s), and refused where they must write to the store while it does not answer; from then every call is refused until a heartbeat goes through",
			left.Round(time.Millisecond), now.Add(left).UTC().Format(time.RFC3339))
	}
	return "the store does not answer: every call is refused (store_unavailable, or the store's error where it must write to it: nothing runs) until it does"
}
