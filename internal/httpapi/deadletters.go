package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/store"
)

// listDeadLetters is GET /v1/deadletters[?state=open|retried|resolved|all].
func (a *API) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	if !a.operatorOnly(w, r, "Dead letters are for operators.") {
		return
	}
	if a.store == nil {
		out := []deadLetterJSON{}
		for _, d := range a.rt.DeadLetters() {
			j := deadLetterJSON{ID: d.ID, Request: d.Request, Tool: d.Tool, Args: d.Args,
				Attempts: d.Attempts, State: store.DeadOpen, Created: d.At, Updated: d.At}
			if d.Error != nil {
				j.Error = d.Error.Message
			}
			out = append(out, j)
		}
		httpjson.Write(w, http.StatusOK, map[string]any{"deadletters": out})
		return
	}
	state := r.URL.Query().Get("state")
	if state == "" {
		state = store.DeadOpen
	} else if state == "all" {
		state = ""
	}
	ds, err := a.store.ListDeadLetters(r.Context(), state)
	if err != nil {
		httpjson.WriteError(w, http.StatusInternalServerError, "store", err.Error(), "Look at the gateway's log.")
		return
	}
	out := make([]deadLetterJSON, len(ds))
	for i, d := range ds {
		out[i] = storedJSON(d)
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"deadletters": out})
}

// deadLetterJSON is a dead letter as the API shows it, whether the store
// or (without a data folder) only the runtime keeps it.
type deadLetterJSON struct {
	ID       string          `json:"id"` // "dl-N" for a stored one
	Request  string          `json:"request"`
	Frame    string          `json:"frame,omitempty"` // the frame of the call it undoes
	Tool     string          `json:"tool"`            // the undo
	Args     json.RawMessage `json:"arguments"`
	Error    string          `json:"error"` // the last failure
	Attempts int             `json:"attempts"`
	State    string          `json:"state"` // open, retried or resolved
	Note     string          `json:"note,omitempty"`
	Created  time.Time       `json:"created"`
	Updated  time.Time       `json:"updated"`
}

func storedJSON(d *store.DeadLetter) deadLetterJSON {
	args := json.RawMessage(d.Args)
	if !json.Valid(args) {
		args, _ = json.Marshal(string(d.Args))
	}
	return deadLetterJSON{ID: fmt.Sprint("dl-", d.ID), Request: d.Request, Frame: d.Frame, Tool: d.Tool, Args: args,
		Error: d.Error, Attempts: d.Attempts, State: d.State, Note: d.Note, Created: d.Created, Updated: d.Updated}
}

// retryDeadLetter is POST /v1/deadletters/{id}/retry: the undo runs again
// through the runtime's dead letter queue (Runtime.RetryDeadLetter), under
// its idempotency key and as an undo, which registers no undo of its own;
// the stored dead letter is put in the queue first if it is not there
// (durable.RestoreDeadLetter). The store's sink settles it (one more
// attempt; retried on success), and the answer carries it as stored after
// the retry. Without a data folder, the id is the runtime queue's.
func (a *API) retryDeadLetter(w http.ResponseWriter, r *http.Request) {
	t, ok := a.claimDeadLetter(w, r)
	if !ok {
		return
	}
	defer t.release()
	res, err := a.rt.RetryDeadLetter(r.Context(), t.queued, principalOf(r))
	if err != nil {
		httpjson.WriteError(w, http.StatusConflict, "busy", upperFirst(err.Error())+".", "Try again when the earlier retry finished.")
		return
	}
	out := map[string]any{"status": res.Status, "result": res}
	if t.stored != nil {
		d, err := a.storedDeadLetter(r.Context(), t.stored.ID)
		if err != nil || d == nil {
			httpjson.WriteError(w, http.StatusInternalServerError, "store", fmt.Sprintf("Dead letter %d was retried but could not be read again: %v.", t.stored.ID, err), "Look at the gateway's log.")
			return
		}
		out["deadletter"] = storedJSON(d)
	}
	httpjson.Write(w, http.StatusOK, out)
}

// dismissDeadLetter is POST /v1/deadletters/{id}/dismiss with
// {"note": "how it was settled"}: an operator settled the undo by hand. It
// leaves the runtime's queue and the store marks it resolved, with who and
// the note (through the store's DeadLetterSettler), and the audit log
// records the dismissal. A dead letter being retried or dismissed is
// refused with 409.
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
	t, ok := a.claimDeadLetter(w, r)
	if !ok {
		return
	}
	defer t.release()
	by := principalOf(r)
	if err := a.rt.DismissDeadLetter(t.queued, by, in.Note); err != nil {
		httpjson.WriteError(w, http.StatusConflict, "busy", upperFirst(err.Error())+".", "Try again when the retry finished.")
		return
	}
	if t.stored == nil {
		httpjson.Write(w, http.StatusOK, map[string]any{"deadletter": map[string]any{"id": t.queued, "state": store.DeadResolved, "note": in.Note}})
		return
	}
	d, err := a.storedDeadLetter(r.Context(), t.stored.ID)
	switch {
	case err != nil || d == nil:
		httpjson.WriteError(w, http.StatusInternalServerError, "store", fmt.Sprintf("Dead letter %d was dismissed, but could not be read back (%v).", t.stored.ID, err),
			"List it with GET /v1/deadletters?state=all to see its state.")
		return
	case d.State != store.DeadResolved:
		httpjson.WriteError(w, http.StatusInternalServerError, "store", fmt.Sprintf("Dead letter %d was dismissed, but the store did not record it.", t.stored.ID),
			"Look at the gateway's log, then dismiss it again.")
		return
	}
	if a.audit != nil {
		if _, err := a.audit.Append(context.WithoutCancel(r.Context()), &audit.Event{Request: d.Request, Kind: "dead_letter",
			Name: d.Tool, Decision: "dismissed", Principal: by, Message: in.Note}); err != nil {
			a.log.Error("dismissal not audited", "dead_letter", d.ID, "err", err)
		}
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"deadletter": storedJSON(d)})
}

// deadLetterClaim is an open dead letter an operator's action holds, so
// that a second action on it (a retry and a dismissal at once, say) is
// refused rather than run on a settled one.
type deadLetterClaim struct {
	stored  *store.DeadLetter // nil without a data folder
	queued  string            // its id in the runtime's queue
	release func()
}

// claimDeadLetter claims the open dead letter that r's path names, for an
// operator: a stored one (id "dl-N" or N), put in the runtime's queue if
// it is not there, or without a data folder one of the runtime's queue.
// Otherwise it answers r and returns false.
func (a *API) claimDeadLetter(w http.ResponseWriter, r *http.Request) (*deadLetterClaim, bool) {
	if !a.operatorOnly(w, r, "Dead letters are for operators.") {
		return nil, false
	}
	key, id := r.PathValue("id"), int64(0)
	if a.store != nil { // one key per dead letter, however the path spells it
		var err error
		if id, err = strconv.ParseInt(strings.TrimPrefix(key, "dl-"), 10, 64); err != nil {
			httpjson.WriteError(w, http.StatusBadRequest, "bad_id", "A dead letter id is dl-N (or N).", "Use an id from GET /v1/deadletters.")
			return nil, false
		}
		key = fmt.Sprint("dl-", id)
	}
	a.deadMu.Lock()
	if a.deadBusy[key] {
		a.deadMu.Unlock()
		httpjson.WriteError(w, http.StatusConflict, "busy", fmt.Sprintf("Dead letter %s is being retried or dismissed.", key), "Try again when that is done.")
		return nil, false
	}
	if a.deadBusy == nil {
		a.deadBusy = map[string]bool{}
	}
	a.deadBusy[key] = true
	a.deadMu.Unlock()
	t := &deadLetterClaim{release: func() {
		a.deadMu.Lock()
		delete(a.deadBusy, key)
		a.deadMu.Unlock()
	}}
	fail := func(status int, code, msg, suggestion string) (*deadLetterClaim, bool) {
		t.release()
		httpjson.WriteError(w, status, code, msg, suggestion)
		return nil, false
	}
	if a.store == nil {
		for _, d := range a.rt.DeadLetters() {
			if d.ID == key {
				t.queued = key
				return t, true
			}
		}
		return fail(http.StatusNotFound, "not_found", fmt.Sprintf("No open dead letter %s.", key), "List them with GET /v1/deadletters.")
	}
	d, err := a.storedDeadLetter(r.Context(), id)
	if err != nil {
		return fail(http.StatusInternalServerError, "store", err.Error(), "Look at the gateway's log.")
	}
	if d == nil || d.State != store.DeadOpen {
		return fail(http.StatusNotFound, "not_found", fmt.Sprintf("No open dead letter %d.", id), "List them with GET /v1/deadletters.")
	}
	if t.queued, err = durable.RestoreDeadLetter(r.Context(), a.store, a.rt, d); err != nil {
		return fail(http.StatusInternalServerError, "store", err.Error(), "Look at the gateway's log.")
	}
	t.stored = d
	return t, true
}

// storedDeadLetter returns the stored dead letter id, nil if there is none.
func (a *API) storedDeadLetter(ctx context.Context, id int64) (*store.DeadLetter, error) {
	all, err := a.store.ListDeadLetters(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, d := range all {
		if d.ID == id {
			return d, nil
		}
	}
	return nil, nil
}
