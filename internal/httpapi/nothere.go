package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentreach/reach/internal/httpjson"
)

// notHere answers a view of request id (GET /v1/requests/{id}, its graph;
// the UI's request page through uiElsewhere) that this instance holds no
// part of, on a store several instances share, from that store: the
// request runs on other instances only. This instance has none of its
// calls to show, and says where they are: the instances that run it, a
// stop through this one that reaches them, and the shared audit log. It
// used to answer "There is no request here", which read as if the id were
// wrong. (A request that ended is found by the runtime, rebuilt from the
// store, and shown.) It reports whether it answered; it answers nothing
// (the caller's plain 404 follows) without a shared store, for a request
// the store does not hold or holds running nowhere else, one the caller
// may not see (as a stop through this instance would be refused), or when
// the store cannot say.
func (a *API) notHere(w http.ResponseWriter, r *http.Request, id string) bool {
	state, names, ok := a.runsElsewhere(r, id)
	if !ok {
		return false
	}
	msg, hint := elsewhereMessage(id, names)
	httpjson.Write(w, http.StatusNotFound, map[string]any{
		"id": id, "state": state, "running_on": names,
		"error": httpjson.Error{Code: "request_elsewhere", Message: msg, Suggestion: hint},
	})
	return true
}

// uiElsewhere is the UI's NotHere: the text of its request page's 404 for
// a request that runs on other instances only, as notHere says it.
func (a *API) uiElsewhere(r *http.Request, id string) (string, bool) {
	_, names, ok := a.runsElsewhere(r, id)
	if !ok {
		return "", false
	}
	msg, hint := elsewhereMessage(id, names)
	return msg + " " + hint, true
}

// runsElsewhere returns the stored state of request id and the instances
// that run it, when the shared store holds it running on other instances
// and r may see it (as a stop through this instance would be allowed);
// ok is false otherwise, and when the store cannot say.
func (a *API) runsElsewhere(r *http.Request, id string) (state string, names []string, ok bool) {
	if a.remote == nil || a.store == nil || id == "" {
		return "", nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), removedTimeout)
	defer cancel()
	sr, err := a.store.GetRequest(ctx, id)
	if err != nil || sr.Unreadable != "" || !a.mayFor(r)(sr.Principal, sr.Tenant) {
		return "", nil, false
	}
	on, err := a.remote.RunningElsewhere(ctx, []string{id})
	if err != nil || len(on[id]) == 0 {
		return "", nil, false
	}
	return sr.State, on[id], true
}

// elsewhereMessage says that request id runs on the instances names, not
// here, and what to do.
func elsewhereMessage(id string, names []string) (msg, hint string) {
	return fmt.Sprintf("Request %s runs on %s, not on this instance: this instance holds no part of it, so it has none of its calls or frames to show.", id, instanceList(names)),
		"Ask the instance that runs it for its view (reach requests show " + id + " --api ITS ADDRESS); a stop through this instance reaches it (reach requests cancel " + id + "); " +
			"its calls on every instance are in the shared audit log (reach audit show " + id + " --store postgres://..., or --config with the instances' configuration)."
}

// instanceList names instances for a message: "instance gw-1", "instances
// gw-1 and gw-2", "instances gw-1, gw-2 and gw-3".
func instanceList(names []string) string {
	if len(names) == 1 {
		return "instance " + names[0]
	}
	return "instances " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
