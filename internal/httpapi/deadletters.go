package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/store"
)

// The dead letters are the runtime's queue (reach.DeadLetterQueue): the
// store's with a data folder, the runtime's memory without one. The API
// lists it, and retries and dismisses through the runtime, which takes a
// dead letter for the action and settles it, so that of two actions at
// once (here, or the CLI's) one acts and the other is refused.

// listDeadLetters is GET /v1/deadletters[?state=open|retried|resolved|all].
func (a *API) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	if !a.anyOperatorOnly(w, r, "Dead letters are for operators.") {
		return
	}
	state := reach.DeadLetterState(r.URL.Query().Get("state"))
	switch state {
	case "":
		state = reach.DeadLetterOpen
	case "all":
		state = ""
	case reach.DeadLetterOpen, reach.DeadLetterTaken, reach.DeadLetterRetried, reach.DeadLetterResolved:
	default:
		httpjson.WriteError(w, http.StatusBadRequest, "bad_state", fmt.Sprintf("There is no dead letter state %q.", state),
			"Use open, retried, resolved, taken or all.")
		return
	}
	ds, err := a.rt.DeadLetters(r.Context(), state)
	if err != nil {
		httpjson.WriteError(w, http.StatusInternalServerError, "store", err.Error(), "Look at the gateway's log.")
		return
	}
	out := make([]deadLetterJSON, 0, len(ds))
	global := a.isOperator(r)
	reqs := map[string]requestOwner{} // of the requests already read: each is read once, however many of its undos failed
	for i := range ds {
		if !global {
			t, known, err := a.deadLetterTenantIn(r.Context(), &ds[i], reqs)
			if err != nil {
				httpjson.WriteError(w, http.StatusInternalServerError, "store", upperFirst(err.Error())+".", "Look at the gateway's log, and try again once the store answers.")
				return
			}
			if !known || !a.operatesOn(r, t) { // one whose owner is not known is a global operator's
				continue
			}
		}
		out = append(out, a.deadLetterOf(&ds[i]))
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"deadletters": out})
}

// deadLetterJSON is a dead letter as the API shows it.
type deadLetterJSON struct {
	ID       string                `json:"id"` // "dl-N" for a stored one
	Request  string                `json:"request"`
	Frame    string                `json:"frame,omitempty"` // the frame of the call it undoes
	Tool     string                `json:"tool"`            // the undo
	Args     json.RawMessage       `json:"arguments"`
	Error    string                `json:"error"` // the last failure
	Attempts int                   `json:"attempts"`
	State    reach.DeadLetterState `json:"state"` // open, taken, retried or resolved
	Note     string                `json:"note,omitempty"`
	Created  time.Time             `json:"created"`
	Updated  time.Time             `json:"updated"`
}

// deadLetterOf is d as the API shows it: its arguments masked (the store
// keeps them as the undo registered them, for its retry).
func (a *API) deadLetterOf(d *reach.DeadLetter) deadLetterJSON {
	args := json.RawMessage(a.redactor.Redact(d.Args))
	if !json.Valid(args) {
		args, _ = json.Marshal(string(args))
	}
	j := deadLetterJSON{ID: d.ID, Request: d.Request, Frame: strings.TrimPrefix(d.Key, "undo:"), Tool: d.Tool, Args: args,
		Attempts: d.Attempts, State: d.State, Note: d.Note, Created: d.At, Updated: d.Updated}
	if d.Error != nil {
		j.Error = d.Error.Message
	}
	return j
}

// retryDeadLetter is POST /v1/deadletters/{id}/retry: the undo runs again
// through the runtime (Runtime.RetryDeadLetter), under its idempotency key
// and as an undo, which registers no undo of its own. The dead letter is
// settled (one more attempt; retried on success), and the answer carries
// it so.
func (a *API) retryDeadLetter(w http.ResponseWriter, r *http.Request) {
	if !a.anyOperatorOnly(w, r, "Dead letters are for operators.") {
		return
	}
	// In the tenant of the dead letter's request, whoever retries it: the
	// undo compensates a write of that tenant, and its compensation ran
	// there; so its retry's events are in that tenant's audit view and its
	// policies judge it, whether its operator or a global one retries it.
	tenant, ok := a.deadLetterOfTenant(w, r, true)
	if !ok {
		return
	}
	res, d, err := a.rt.RetryDeadLetterIn(r.Context(), r.PathValue("id"), principalOf(r), tenant)
	if deadLetterError(w, r, err) {
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"status": res.Status, "result": res, "deadletter": a.deadLetterOf(d)})
}

// dismissDeadLetter is POST /v1/deadletters/{id}/dismiss with
// {"note": "how it was settled"}: an operator settled the undo by hand. The
// dead letter is resolved, with who and the note
// (Runtime.DismissDeadLetter), and the audit log records the dismissal.
func (a *API) dismissDeadLetter(w http.ResponseWriter, r *http.Request) {
	data, ok := httpjson.ReadBody(w, r)
	if !ok {
		return
	}
	var in struct {
		Note string `json:"note"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || strings.TrimSpace(in.Note) == "" {
		httpjson.WriteError(w, http.StatusBadRequest, "bad_body", "A dismissal says how the dead letter was settled.",
			`Send {"note": "refunded by hand in the billing console"}.`)
		return
	}
	if len(in.Note) > 500 {
		in.Note = strings.ToValidUTF8(in.Note[:500], "")
	}
	tenant, ok := a.deadLetterOfTenant(w, r, false)
	if !ok {
		return
	}
	in.Note = a.redactor.RedactString(in.Note) // kept, shown and audited
	by := principalOf(r)
	d, err := a.rt.DismissDeadLetter(r.Context(), r.PathValue("id"), by, in.Note)
	if deadLetterError(w, r, err) {
		return
	}
	if a.audit != nil {
		// The event is of the dead letter's tenant, whoever dismissed it
		// (its operator, or a global one), and names who did: the tenant
		// sees in its own audit view how its undo was settled, and by whom.
		// A global operator's dismissal read no tenant before it acted
		// (deadLetterOfTenant): the dead letter's is read now, once it is
		// settled, and one not read is logged, the event then of no tenant.
		if a.isOperator(r) {
			t, _, err := a.deadLetterTenant(context.WithoutCancel(r.Context()), d)
			if err != nil {
				a.log.Error("dismissal audited in no tenant: its tenant was not read", "dead_letter", d.ID, "err", err)
			}
			tenant = t
		}
		if _, err := a.audit.Append(context.WithoutCancel(r.Context()), &audit.Event{Request: d.Request, Kind: "dead_letter",
			Name: d.Tool, Decision: "dismissed", Principal: by, Tenant: tenant, Message: in.Note}); err != nil {
			a.log.Error("dismissal not audited", "dead_letter", d.ID, "err", err)
		}
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"deadletter": a.deadLetterOf(d)})
}

// deadLetterTenant returns the tenant of d, in which its operator sees
// and acts on it, and whether it is known; an error if the store could not
// be read (it did not answer): whose the dead letter is, and where its
// retry runs, is then not known.
//
// A dead letter keeps the owner of its request's root from when it was
// added (Principal, Tenant): that is its tenant, whatever became of the
// request. Request ids are one namespace, chosen by clients: once
// retention removed the request, a later one of another tenant may take
// its id, and is not the dead letter's owner
// (TestDeadLetterKeepsItsOwner). One added before the queue kept its
// owner (or of a request of no owner) has neither: the request of its id
// says whose it is, the runtime's or the store's record of it, if that
// began no later than the dead letter; one that began after it took the
// id later, and the dead letter is then a global operator's.
func (a *API) deadLetterTenant(ctx context.Context, d *reach.DeadLetter) (string, bool, error) {
	return a.deadLetterTenantIn(ctx, d, nil)
}

// requestOwner is what deadLetterTenant reads of a request: its root's
// tenant, when it began, and whether the runtime or the store holds it.
type requestOwner struct {
	tenant  string
	started time.Time
	known   bool
}

// deadLetterTenantIn is deadLetterTenant with the requests already read
// (by id; nil reads each again).
func (a *API) deadLetterTenantIn(ctx context.Context, d *reach.DeadLetter, reqs map[string]requestOwner) (string, bool, error) {
	if d.Principal != "" || d.Tenant != "" {
		return d.Tenant, true, nil
	}
	o, seen := reqs[d.Request]
	if !seen {
		var err error
		if o, err = a.requestOwnerOf(ctx, d); err != nil {
			return "", false, err
		}
		if reqs != nil {
			reqs[d.Request] = o
		}
	}
	if !o.known || !d.At.IsZero() && o.started.After(d.At) {
		return "", false, nil
	}
	return o.tenant, true, nil
}

// requestOwnerOf reads the request of d: the runtime's, or the store's
// record of it.
func (a *API) requestOwnerOf(ctx context.Context, d *reach.DeadLetter) (requestOwner, error) {
	if req, ok := a.rt.Lookup(d.Request); ok {
		return requestOwner{tenant: req.Root().Tenant(), started: req.Root().Started(), known: true}, nil
	}
	if a.store == nil {
		return requestOwner{}, nil
	}
	sr, err := a.store.GetRequest(ctx, d.Request)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return requestOwner{}, nil
	case err != nil:
		return requestOwner{}, fmt.Errorf("reading the request of dead letter %s: %w", d.ID, err)
	}
	return requestOwner{tenant: sr.Tenant, started: sr.Started, known: true}, nil
}

// deadLetterOfTenant returns the tenant of the open dead letter r names
// (deadLetterTenant: the owner it keeps, or for one stored before, its
// request's), in which an action on it runs, and whether the caller of r
// acts on it: a global operator on any (the tenant is "" if it is not
// known, and the action answers for an id of no open dead letter, or a
// bad one), a tenant's operator on its tenant's. Otherwise it answers 404, as for a dead letter
// that is not there: another tenant's is not told of. Only the open dead
// letters (taken ones too) are read: an action takes one of those, and
// the queue keeps every one ever settled besides. A global operator's
// action that runs nothing (run false: a dismissal) needs no tenant, and
// reads none. A request whose tenant the store could not read answers
// 500: a retry run in no tenant would be out of its tenant's view and
// policies (TestDeadLetterTenantUnreadable).
func (a *API) deadLetterOfTenant(w http.ResponseWriter, r *http.Request, run bool) (string, bool) {
	global := a.isOperator(r)
	if global && !run {
		return "", true
	}
	id := r.PathValue("id")
	if n, err := strconv.ParseInt(strings.TrimPrefix(id, "dl-"), 10, 64); err == nil {
		id = "dl-" + strconv.FormatInt(n, 10) // a stored one's, as the list names it: the store's queue takes n and dl-n
	}
	ds, err := a.rt.DeadLetters(r.Context(), reach.DeadLetterOpen)
	if err != nil {
		httpjson.WriteError(w, http.StatusInternalServerError, "store", upperFirst(err.Error())+".", "Look at the gateway's log.")
		return "", false
	}
	for i := range ds {
		if ds[i].ID != id {
			continue
		}
		tenant, known, err := a.deadLetterTenant(r.Context(), &ds[i])
		if err != nil {
			httpjson.WriteError(w, http.StatusInternalServerError, "store", upperFirst(err.Error())+".", "Look at the gateway's log, and try again once the store answers: the dead letter is left open.")
			return "", false
		}
		if global || known && a.operatesOn(r, tenant) {
			return tenant, true
		}
		break
	}
	if global {
		return "", true
	}
	httpjson.WriteError(w, http.StatusNotFound, "not_found", fmt.Sprintf("No open dead letter %s.", r.PathValue("id")), "List them with reach deadletters list (GET /v1/deadletters).")
	return "", false
}

// deadLetterError answers the error of an action on a dead letter, and
// reports whether there was one.
func deadLetterError(w http.ResponseWriter, r *http.Request, err error) bool {
	id := r.PathValue("id")
	switch {
	case err == nil:
		return false
	case errors.Is(err, reach.ErrDeadLetterBusy):
		httpjson.WriteError(w, http.StatusConflict, "busy", fmt.Sprintf("Dead letter %s is being retried or dismissed.", id),
			"Try again when that is done (reach deadletters list --state all shows it taken until then); one a crash cut off is given back by a recovery (on several instances, by the first one ten minutes or more after it was taken, if not before).")
	case errors.Is(err, reach.ErrNoDeadLetter):
		httpjson.WriteError(w, http.StatusNotFound, "not_found", fmt.Sprintf("No open dead letter %s.", id), "List them with reach deadletters list (GET /v1/deadletters).")
	case errors.Is(err, reach.ErrDeadLetterID):
		httpjson.WriteError(w, http.StatusBadRequest, "bad_id", upperFirst(err.Error())+".", "Use an id that reach deadletters list (GET /v1/deadletters) shows.")
	default:
		httpjson.WriteError(w, http.StatusInternalServerError, "store", upperFirst(err.Error())+".", "Look at the gateway's log, and list the dead letters with reach deadletters list --state all (GET /v1/deadletters?state=all).")
	}
	return true
}
