package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/httpjson"
)

// HandlerOptions configure the HTTP handler. A nil *HandlerOptions means
// all defaults.
type HandlerOptions struct {
	// Actor returns who makes an HTTP request; if nil, the identity the auth
	// middleware put in its context, or "anonymous" without one.
	Actor func(r *http.Request) Actor
}

// View is an approval as the API returns it: its fields and its prompt,
// and, answering a decision, what its caller should know of how it was
// recorded (Notice).
type View struct {
	Approval
	Prompt string `json:"prompt"`
	Notice string `json:"notice,omitempty"`
}

// lateNotice is a decision's Notice when its write answered an error and
// the store held it all the same (Approval.Late).
const lateNotice = "The store was slow to confirm this decision, and holds it: the decision stands; there is nothing to do again."

func view(a Approval) View {
	v := View{Approval: a, Prompt: a.Prompt()}
	if a.Late {
		v.Notice = lateNotice
	}
	return v
}

// maxBody bounds a decision's body.
const maxBody = 64 << 10

// Handler serves the approvals API; mount it on /v1/approvals and
// /v1/approvals/ (it routes the full paths):
//
//	GET  /v1/approvals[?status=pending]  {"approvals": [...]}, those the caller may see
//	GET  /v1/approvals/{id}              one approval
//	POST /v1/approvals/{id}/approve      {"reason": "..."} (optional body)
//	POST /v1/approvals/{id}/deny         {"reason": "..."}
//
// A caller sees the approvals of its own requests, and a reviewer those of
// its tenant. Errors are {"error": {"code", "message", "suggestion"}} with
// 404 (unknown, or not the caller's to see), 403 (not the caller's to
// decide), 409 (already decided, or already approved by the caller), 503
// (the store did not record the decision: not_recorded; or, on a store
// instances share, could not be read for an approval this instance does
// not know: store_unavailable), 405 (another
// method) or 400. A decision whose write answered an error but that the
// store holds is answered 200, saying so (View.Notice).
func (q *Queue) Handler(opts *HandlerOptions) http.Handler {
	var o HandlerOptions
	if opts != nil {
		o = *opts
	}
	if o.Actor == nil {
		o.Actor = actorFromContext
	}
	h := &handler{q: q, actor: o.Actor}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/approvals", h.list)
	mux.HandleFunc("GET /v1/approvals/{id}", h.get)
	mux.HandleFunc("POST /v1/approvals/{id}/approve", h.decide(true))
	mux.HandleFunc("POST /v1/approvals/{id}/deny", h.decide(false))
	// Any other method or path gets the API's error body too: the mux's own
	// answers are plain text, which a client reading JSON cannot parse.
	mux.HandleFunc("/v1/approvals", wrongMethod("GET"))
	mux.HandleFunc("/v1/approvals/{id}", wrongMethod("GET"))
	mux.HandleFunc("/v1/approvals/{id}/approve", wrongMethod("POST"))
	mux.HandleFunc("/v1/approvals/{id}/deny", wrongMethod("POST"))
	mux.HandleFunc("/", nothingAt)
	return mux
}

// wrongMethod answers 405 for a path served with another method.
func wrongMethod(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		httpjson.WriteError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s %s is not served; use %s.", r.Method, r.URL.Path, allow),
			"GET /v1/approvals[/{id}], POST /v1/approvals/{id}/approve or /deny.")
	}
}

// nothingAt answers a path under /v1/approvals that names no approval or
// no action on one.
func nothingAt(w http.ResponseWriter, r *http.Request) {
	httpjson.WriteError(w, http.StatusNotFound, "not_found", fmt.Sprintf("There is nothing at %s %s.", r.Method, r.URL.Path),
		"GET /v1/approvals[/{id}], POST /v1/approvals/{id}/approve or /deny.")
}

func actorFromContext(r *http.Request) Actor {
	if id, ok := auth.IdentityFrom(r.Context()); ok {
		return Actor{Principal: id.Principal, Roles: id.Roles, Tenant: id.Tenant}
	}
	return Actor{Principal: "anonymous"}
}

type handler struct {
	q     *Queue
	actor func(*http.Request) Actor
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	st := Status(r.URL.Query().Get("status"))
	switch st {
	case "", Pending, Approved, Used, Denied, Expired:
	default:
		httpjson.WriteError(w, http.StatusBadRequest, "bad_status", fmt.Sprintf("There is no status %q.", st),
			"Use pending, approved, used, denied or expired.")
		return
	}
	by := h.actor(r)
	out := []View{}
	for _, a := range h.q.List(st) {
		if h.q.CanDecide(&a, by) {
			out = append(out, view(a))
		}
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"approvals": out})
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	a, ok, err := h.q.Find(r.PathValue("id"))
	if err != nil {
		h.unreadable(w, r.PathValue("id"), err)
		return
	}
	if !ok || !h.q.CanDecide(&a, h.actor(r)) {
		notFound(w, r.PathValue("id"))
		return
	}
	httpjson.Write(w, http.StatusOK, view(a))
}

func (h *handler) decide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Reason string `json:"reason"`
		}
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err == nil && len(bytes.TrimSpace(b)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			err = dec.Decode(&body)
		}
		if err != nil {
			httpjson.WriteError(w, http.StatusBadRequest, "bad_body", "The body must be a JSON object like {\"reason\": \"...\"}: "+err.Error()+".", "")
			return
		}
		id, by := r.PathValue("id"), h.actor(r)
		if a, ok, err := h.q.Find(id); err != nil {
			h.unreadable(w, id, err)
			return
		} else if !ok || !h.q.CanDecide(&a, by) {
			notFound(w, id)
			return
		}
		var a Approval
		if approve {
			a, err = h.q.Approve(id, by, body.Reason)
		} else {
			a, err = h.q.Deny(id, by, body.Reason)
		}
		switch {
		case err == nil:
			httpjson.Write(w, http.StatusOK, view(a))
		case errors.Is(err, ErrNotFound):
			notFound(w, id)
		case errors.Is(err, ErrNotAllowed):
			httpjson.WriteError(w, http.StatusForbidden, "not_allowed", upper(err.Error())+".", "Ask the user who made the request, or a reviewer.")
		case errors.Is(err, ErrAlreadyVoted):
			httpjson.WriteError(w, http.StatusConflict, "already_approved", upper(err.Error())+".", "")
		case errors.Is(err, ErrNotRecorded):
			// The store's own text (a driver's, with its host, user or
			// SQL) is logged, not told.
			h.q.o.Logger.Warn("approvals: a decision not recorded", "approval", id, "by", by.Principal, "err", err)
			why := "the store did not take it"
			switch {
			case errors.Is(err, ErrUnreadable):
				why = "the approvals' store could not be read, and this gateway does not know the approval"
			case errors.Is(err, context.DeadlineExceeded):
				why = "the store did not confirm it in time (it may still be applied)"
			}
			msg := fmt.Sprintf("Decision not recorded: %s", why)
			if a.Status != "" {
				msg += fmt.Sprintf("; %s stays %s", id, a.Status)
			}
			httpjson.WriteError(w, http.StatusServiceUnavailable, "not_recorded", msg+".",
				"Nothing was decided as far as the gateway could read the store back. Look at the approval again in a moment (reach approvals list --all): if it still waits, decide it again.")
		case errors.Is(err, ErrDecided):
			httpjson.WriteError(w, http.StatusConflict, "already_decided", upper(err.Error())+".", decidedSuggestion(a.Status))
		default:
			httpjson.WriteError(w, http.StatusInternalServerError, "internal", upper(err.Error())+".", "")
		}
	}
}

// decidedSuggestion says what to do about an approval decided already:
// one that expired is replaced by the agent's next call of it, which asks
// again; another stays as decided.
func decidedSuggestion(status Status) string {
	if status == Expired {
		return "It expired (nobody decided it, or the approved call did not come, in time) and cannot be decided now: when the agent calls it again in its request, a new approval is asked for; decide that one (reach approvals list)."
	}
	return "A decided approval is not decided again: see it with reach approvals list --all."
}

func upper(s string) string {
	if s == "" {
		return s
	}
	b := []byte(s)
	if b[0] >= 'a' && b[0] <= 'z' {
		b[0] -= 'a' - 'A'
	}
	return string(b)
}

// unreadable answers for approval id, which the shared store could not
// be read for (ErrUnreadable): it may exist; nothing was decided. The
// store's own text (a driver's, with its host, user or SQL) is logged,
// not told.
func (h *handler) unreadable(w http.ResponseWriter, id string, err error) {
	h.q.o.Logger.Warn("approvals: the store not read for an approval not known here", "approval", id, "err", err)
	httpjson.WriteError(w, http.StatusServiceUnavailable, "store_unavailable", fmt.Sprintf("Approvals' store not read: approval %s is not one this gateway knows, and the store instances share did not answer.", id),
		"The approvals' store did not answer, and this gateway does not know the approval (another instance may have asked it): nothing was decided. Try again in a moment.")
}

func notFound(w http.ResponseWriter, id string) {
	httpjson.WriteError(w, http.StatusNotFound, "not_found", fmt.Sprintf("There is no approval %s that you may see.", id),
		"List the approvals with reach approvals list (GET /v1/approvals).")
}
