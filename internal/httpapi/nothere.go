package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentreach/reach/internal/httpjson"
)

// notHere answers a view of request id (GET /v1/requests/{id}, its graph)
// that this instance holds no part of, on a store several instances share,
// from that store: the request runs on other instances only. This
// instance has none of its calls to show, and says where they are: the
// instances that run it, a stop through this one that reaches them, and
// the shared audit log. It used to answer "There is no request here",
// which read as if the id were wrong. (A request that ended is found by
// the runtime, rebuilt from the store, and shown.) It reports whether it
// answered; it answers nothing (the caller's plain 404 follows) without a
// shared store, for a request the store does not hold or holds running
// nowhere else, one the caller may not see (as a stop through this
// instance would be refused), or when the store cannot say.
func (a *API) notHere(w http.ResponseWriter, r *http.Request, id string) bool {
	if a.remote == nil || a.store == nil || id == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), removedTimeout)
	defer cancel()
	sr, err := a.store.GetRequest(ctx, id)
	if err != nil || sr.Unreadable != "" || !a.mayFor(r)(sr.Principal, sr.Tenant) {
		return false
	}
	on, err := a.remote.RunningElsewhere(ctx, []string{id})
	if err != nil {
		return false
	}
	names := on[id]
	if len(names) == 0 {
		return false
	}
	httpjson.Write(w, http.StatusNotFound, map[string]any{
		"id": id, "state": sr.State, "running_on": names,
		"error": httpjson.Error{Code: "request_elsewhere",
			Message: fmt.Sprintf("Request %s runs on %s, not on this instance: this instance holds no part of it, so it has none of its calls or frames to show.", id, instanceList(names)),
			Suggestion: "Ask the instance that runs it for its view (reach requests show " + id + " --api ITS ADDRESS); a stop through this instance reaches it (reach requests cancel " + id + "); " +
				"its calls on every instance are in the shared audit log (reach audit show " + id + " --store postgres://..., or --config with the instances' configuration)."},
	})
	return true
}

// instanceList names instances for a message: "instance gw-1", "instances
// gw-1 and gw-2", "instances gw-1, gw-2 and gw-3".
func instanceList(names []string) string {
	if len(names) == 1 {
		return "instance " + names[0]
	}
	return "instances " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
