package gateway

import (
	"fmt"
	"net/http"
)

// The probes, with the meanings Kubernetes gives them:
//
//   - GET /livez: the process serves HTTP. Always 200 while it does; a
//     restart would not fix a down upstream, so nothing else counts here.
//   - GET /readyz: send this instance traffic. 503 while it shuts down and
//     while an upstream marked required: true is not connected; 200
//     otherwise, also when an optional upstream is down (its tools are
//     refused with a structured error; the rest work).
//   - GET /healthz: the report, for people and monitors: {"status": "ok" |
//     "degraded" (an upstream is not connected), "ready", "tools",
//     "upstreams": [...]}, always 200 while the process serves, like /livez:
//     decide on traffic with /readyz, not on this.
//
// None of them needs credentials, and none tells more than names, counts
// and connection states.

func (g *Gateway) livez(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// notReady says why the gateway should get no traffic, or nothing.
func (g *Gateway) notReady() []string {
	var why []string
	if g.draining.Load() {
		why = append(why, "shutting down")
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

func (g *Gateway) readyz(w http.ResponseWriter, _ *http.Request) {
	if why := g.notReady(); len(why) > 0 {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "not_ready", "reasons": why})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready"})
}

func (g *Gateway) healthz(w http.ResponseWriter, _ *http.Request) {
	ups := g.Upstreams()
	status := "ok"
	for _, u := range ups {
		if !u.Connected {
			status = "degraded"
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": status, "ready": len(g.notReady()) == 0, "tools": len(g.rt.Tools()), "upstreams": ups})
}
