package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/ui"
)

// persistence opens the store in the data folder (when the configuration
// names one, or came from a file): the audit log becomes a recorder, every
// write is checkpointed, idempotency records and dead letters are durable.
// It returns the audit log, or nil without a data folder.
func (g *Gateway) persistence(ctx context.Context, ro *reach.Options) (*audit.Log, error) {
	if g.opts.Ephemeral || (g.cfg.Data == "" && g.cfg.dir == "") {
		return nil, nil
	}
	dir, err := g.cfg.EnsureDataDir()
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, dir, nil)
	if err != nil {
		return nil, fmt.Errorf("opening the store in %s: %w", dir, err)
	}
	log, err := audit.New(ctx, st, nil)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("opening the audit log in %s: %w", dir, err)
	}
	cp := durable.New(st, nil, g.log.With("component", "checkpoints"))
	ro.Checkpoints, ro.DeadLetters = cp, cp
	// Claims carry a lease and an owner of this process's life, so that
	// recover settles the claims a crashed run left (see durable.Recover).
	g.idem = store.NewIdempotency(st, &store.IdempotencyOptions{Logger: g.log.With("component", "idempotency")})
	ro.Idempotency = g.idem
	g.store, g.audit = st, log
	return log, nil
}

// recover resolves what a previous run left in flight; call it once the
// tools are registered.
func (g *Gateway) recover(ctx context.Context) error {
	if g.store == nil {
		return nil
	}
	rep, err := durable.Recover(ctx, g.store, g.rt, &durable.RecoverOptions{Idempotency: g.idem})
	if err != nil {
		return fmt.Errorf("recovering from the previous run: %w", err)
	}
	for _, c := range rep.Claims {
		g.log.Warn("an idempotency key was claimed when the gateway stopped: settled", "key", c.Claim.Key, "outcome", c.Outcome)
	}
	for _, f := range rep.MayHaveRun {
		g.log.Warn("a call was running when the gateway stopped: it may have run", "request", f.Request, "tool", f.Name, "idempotency_key", f.IdemKey)
	}
	for _, id := range rep.Interrupted {
		g.log.Warn("request interrupted by a restart", "request", id, "compensations", len(rep.Compensated[id]))
	}
	return nil
}

func (g *Gateway) closeStore() error {
	var errs []error
	if g.audit != nil {
		errs = append(errs, g.audit.Close())
	}
	if g.store != nil {
		errs = append(errs, g.store.Close())
	}
	return errors.Join(errs...)
}

// auditView adapts the audit log to the UI's audit page.
type auditView struct {
	st *store.SQLite
	vc *verifyCache
}

func newAuditView(st *store.SQLite) auditView {
	return auditView{st: st, vc: &verifyCache{verify: func(ctx context.Context) (*audit.Report, error) { return audit.Verify(ctx, st) }}}
}

func (a auditView) Verify(ctx context.Context) (bool, string) { return a.vc.get(ctx) }

// verifyCache keeps the last verification of the whole chain for
// verifyFor: walking a large log on every load of the audit page would
// let any viewer keep the store busy. One verification runs at a time;
// the others wait for it and share its result.
type verifyCache struct {
	verify func(context.Context) (*audit.Report, error)
	now    func() time.Time // time.Now if nil

	mu  sync.Mutex
	at  time.Time
	ok  bool
	msg string
}

const verifyFor = 30 * time.Second

func (c *verifyCache) get(ctx context.Context) (bool, string) {
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && now().Sub(c.at) < verifyFor {
		return c.ok, c.msg + fmt.Sprintf(" (checked %s ago)", now().Sub(c.at).Round(time.Second))
	}
	rep, err := c.verify(ctx)
	if ctx.Err() != nil { // the viewer left: keep nothing of a cut walk
		return false, "not checked: " + ctx.Err().Error()
	}
	c.at = now()
	if err != nil {
		c.ok, c.msg = false, err.Error()
	} else {
		c.ok, c.msg = true, fmt.Sprintf("%d events, head %s", rep.Events, audit.FormatHash(rep.Head))
	}
	return c.ok, c.msg
}

func (a auditView) Search(ctx context.Context, q ui.AuditQuery, limit int) ([]ui.AuditRow, error) {
	evs, err := a.events(ctx, q, limit)
	if err != nil {
		return nil, err
	}
	rows := make([]ui.AuditRow, 0, len(evs))
	for _, e := range evs {
		reason := e.Message
		if e.Code != "" {
			reason = e.Code + ": " + reason
		}
		rows = append(rows, ui.AuditRow{Seq: e.Seq, Time: e.Time, Request: e.Request, Principal: e.Principal,
			Frame: e.Frame, Name: e.Name, Decision: e.Decision, Reason: reason})
	}
	return rows, nil
}

// events returns the newest limit events that q selects: a request's, or
// the most recent ones, filtered by tool, principal and owner.
func (a auditView) events(ctx context.Context, q ui.AuditQuery, limit int) ([]*audit.Event, error) {
	var evs []*audit.Event
	var err error
	if q.Request != "" {
		evs, err = audit.Show(ctx, a.st, q.Request)
	} else {
		fetch := limit
		if q.Owner != nil || q.Tool != "" || q.Principal != "" {
			fetch = min(limit*10, 10000) // the filter keeps some of them
		}
		evs, err = audit.Recent(ctx, a.st, fetch)
	}
	if err != nil {
		return nil, err
	}
	evs = slices.DeleteFunc(evs, func(e *audit.Event) bool {
		return (q.Tool != "" && e.Name != q.Tool) || (q.Principal != "" && e.Principal != q.Principal) ||
			(q.Owner != nil && (e.Principal != q.Owner.Principal || e.Tenant != q.Owner.Tenant))
	})
	if len(evs) > limit {
		evs = evs[len(evs)-limit:]
	}
	return evs, nil
}

// auditEvents is GET /v1/audit[?request=ID][&tool=NAME][&principal=P][&limit=N]:
// the newest N (default 100, at most 1000) events of one request, or of
// the newest events of the log (ten times N when filtered), oldest first.
// A principal who is not an operator sees only its own events, in its
// tenant.
func (g *Gateway) auditEvents(w http.ResponseWriter, r *http.Request) {
	if g.store == nil {
		writeError(w, http.StatusNotFound, "no_store", "This gateway keeps no audit log (no data folder).", "Start it with --data.")
		return
	}
	limit := 100
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, "bad_limit", "The limit is a number from 1 to 1000.", "Send ?limit=100, or leave it out.")
			return
		}
		limit = n
	}
	q := ui.AuditQuery{Request: r.URL.Query().Get("request"), Tool: r.URL.Query().Get("tool"), Principal: r.URL.Query().Get("principal")}
	if !g.isOperator(r) {
		a := uiActor(r)
		q.Principal, q.Owner = a.Principal, &a
	}
	evs, err := g.auditV.events(r.Context(), q, limit)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "store", err.Error(), "Look at the gateway's log.")
		return
	}
	type eventJSON struct {
		Seq     int64        `json:"seq"`
		Time    time.Time    `json:"time"`
		Request string       `json:"request"`
		Event   *audit.Event `json:"event"` // as the log stores it (redacted)
	}
	out := make([]eventJSON, len(evs))
	for i, e := range evs {
		out[i] = eventJSON{Seq: e.Seq, Time: e.Time, Request: e.Request, Event: e}
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": out})
}

// auditVerify is GET /v1/audit/verify: whether the hash chain of the whole
// log holds (checked at most every verifyFor, see verifyCache).
func (g *Gateway) auditVerify(w http.ResponseWriter, r *http.Request) {
	if g.store == nil {
		writeError(w, http.StatusNotFound, "no_store", "This gateway keeps no audit log (no data folder).", "Start it with --data.")
		return
	}
	ok, msg := g.auditV.Verify(r.Context())
	writeJSON(w, http.StatusOK, map[string]any{"ok": ok, "message": msg})
}

// toolStats is GET /v1/stats: per tool, its calls by outcome, its success
// rate, latency percentiles (p50, p95, in nanoseconds), failures by code
// and refusals by guard. With auth, for operators: the figures are of
// every principal's calls.
func (g *Gateway) toolStats(w http.ResponseWriter, r *http.Request) {
	if !g.operatorOnly(w, r, "Statistics are for operators: they count every principal's calls.") {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": g.stats.Snapshot()})
}

// operatorOnly reports whether r is an operator's; otherwise it answers
// 403 with why.
func (g *Gateway) operatorOnly(w http.ResponseWriter, r *http.Request, why string) bool {
	if g.isOperator(r) {
		return true
	}
	writeError(w, http.StatusForbidden, "operators_only", why, "Ask a principal with the role "+operatorRole+" to look at them.")
	return false
}

// listDeadLetters is GET /v1/deadletters[?state=open|retried|resolved|all].
func (g *Gateway) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	if !g.operatorOnly(w, r, "Dead letters are for operators.") {
		return
	}
	if g.store == nil {
		out := []deadLetterJSON{}
		for _, d := range g.rt.DeadLetters() {
			j := deadLetterJSON{ID: d.ID, Request: d.Request, Tool: d.Tool, Args: d.Args,
				Attempts: d.Attempts, State: store.DeadOpen, Created: d.At, Updated: d.At}
			if d.Error != nil {
				j.Error = d.Error.Message
			}
			out = append(out, j)
		}
		writeJSON(w, http.StatusOK, map[string]any{"deadletters": out})
		return
	}
	state := r.URL.Query().Get("state")
	if state == "" {
		state = store.DeadOpen
	} else if state == "all" {
		state = ""
	}
	ds, err := g.store.ListDeadLetters(r.Context(), state)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "store", err.Error(), "Look at the gateway's log.")
		return
	}
	out := make([]deadLetterJSON, len(ds))
	for i, d := range ds {
		out[i] = storedJSON(d)
	}
	writeJSON(w, http.StatusOK, map[string]any{"deadletters": out})
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
func (g *Gateway) retryDeadLetter(w http.ResponseWriter, r *http.Request) {
	t, ok := g.claimDeadLetter(w, r)
	if !ok {
		return
	}
	defer t.release()
	res, err := g.rt.RetryDeadLetter(r.Context(), t.queued, principalOf(r))
	if err != nil {
		writeError(w, http.StatusConflict, "busy", upperFirst(err.Error())+".", "Try again when the earlier retry finished.")
		return
	}
	out := map[string]any{"status": res.Status, "result": res}
	if t.stored != nil {
		d, err := g.storedDeadLetter(r.Context(), t.stored.ID)
		if err != nil || d == nil {
			writeError(w, http.StatusInternalServerError, "store", fmt.Sprintf("Dead letter %d was retried but could not be read again: %v.", t.stored.ID, err), "Look at the gateway's log.")
			return
		}
		out["deadletter"] = storedJSON(d)
	}
	writeJSON(w, http.StatusOK, out)
}

// dismissDeadLetter is POST /v1/deadletters/{id}/dismiss with
// {"note": "how it was settled"}: an operator settled the undo by hand. It
// leaves the runtime's queue and the store marks it resolved, with who and
// the note (through the store's DeadLetterSettler), and the audit log
// records the dismissal. A dead letter being retried or dismissed is
// refused with 409.
func (g *Gateway) dismissDeadLetter(w http.ResponseWriter, r *http.Request) {
	data, ok := readBody(w, r)
	if !ok {
		return
	}
	var in struct {
		Note string `json:"note"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || strings.TrimSpace(in.Note) == "" {
		writeError(w, http.StatusBadRequest, "bad_body", "A dismissal says how the dead letter was settled.",
			`Send {"note": "refunded by hand in the billing console"}.`)
		return
	}
	if len(in.Note) > 500 {
		in.Note = strings.ToValidUTF8(in.Note[:500], "")
	}
	in.Note = g.redactor.RedactString(in.Note) // kept, shown and audited
	t, ok := g.claimDeadLetter(w, r)
	if !ok {
		return
	}
	defer t.release()
	by := principalOf(r)
	if err := g.rt.DismissDeadLetter(t.queued, by, in.Note); err != nil {
		writeError(w, http.StatusConflict, "busy", upperFirst(err.Error())+".", "Try again when the retry finished.")
		return
	}
	if t.stored == nil {
		writeJSON(w, http.StatusOK, map[string]any{"deadletter": map[string]any{"id": t.queued, "state": store.DeadResolved, "note": in.Note}})
		return
	}
	d, err := g.storedDeadLetter(r.Context(), t.stored.ID)
	switch {
	case err != nil || d == nil:
		writeError(w, http.StatusInternalServerError, "store", fmt.Sprintf("Dead letter %d was dismissed, but could not be read back (%v).", t.stored.ID, err),
			"List it with GET /v1/deadletters?state=all to see its state.")
		return
	case d.State != store.DeadResolved:
		writeError(w, http.StatusInternalServerError, "store", fmt.Sprintf("Dead letter %d was dismissed, but the store did not record it.", t.stored.ID),
			"Look at the gateway's log, then dismiss it again.")
		return
	}
	if g.audit != nil {
		if _, err := g.audit.Append(context.WithoutCancel(r.Context()), &audit.Event{Request: d.Request, Kind: "dead_letter",
			Name: d.Tool, Decision: "dismissed", Principal: by, Message: in.Note}); err != nil {
			g.log.Error("dismissal not audited", "dead_letter", d.ID, "err", err)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"deadletter": storedJSON(d)})
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
func (g *Gateway) claimDeadLetter(w http.ResponseWriter, r *http.Request) (*deadLetterClaim, bool) {
	if !g.operatorOnly(w, r, "Dead letters are for operators.") {
		return nil, false
	}
	key, id := r.PathValue("id"), int64(0)
	if g.store != nil { // one key per dead letter, however the path spells it
		var err error
		if id, err = strconv.ParseInt(strings.TrimPrefix(key, "dl-"), 10, 64); err != nil {
			writeError(w, http.StatusBadRequest, "bad_id", "A dead letter id is dl-N (or N).", "Use an id that reach deadletters list (GET /v1/deadletters) shows.")
			return nil, false
		}
		key = fmt.Sprint("dl-", id)
	}
	g.deadMu.Lock()
	if g.deadBusy[key] {
		g.deadMu.Unlock()
		writeError(w, http.StatusConflict, "busy", fmt.Sprintf("Dead letter %s is being retried or dismissed.", key), "Try again when that is done.")
		return nil, false
	}
	if g.deadBusy == nil {
		g.deadBusy = map[string]bool{}
	}
	g.deadBusy[key] = true
	g.deadMu.Unlock()
	t := &deadLetterClaim{release: func() {
		g.deadMu.Lock()
		delete(g.deadBusy, key)
		g.deadMu.Unlock()
	}}
	fail := func(status int, code, msg, suggestion string) (*deadLetterClaim, bool) {
		t.release()
		writeError(w, status, code, msg, suggestion)
		return nil, false
	}
	if g.store == nil {
		for _, d := range g.rt.DeadLetters() {
			if d.ID == key {
				t.queued = key
				return t, true
			}
		}
		return fail(http.StatusNotFound, "not_found", fmt.Sprintf("No open dead letter %s.", key), "List them with reach deadletters list (GET /v1/deadletters).")
	}
	d, err := g.storedDeadLetter(r.Context(), id)
	if err != nil {
		return fail(http.StatusInternalServerError, "store", err.Error(), "Look at the gateway's log.")
	}
	if d == nil || d.State != store.DeadOpen {
		return fail(http.StatusNotFound, "not_found", fmt.Sprintf("No open dead letter %d.", id), "List them with reach deadletters list (GET /v1/deadletters).")
	}
	if t.queued, err = durable.RestoreDeadLetter(r.Context(), g.store, g.rt, d); err != nil {
		return fail(http.StatusInternalServerError, "store", err.Error(), "Look at the gateway's log.")
	}
	t.stored = d
	return t, true
}

// storedDeadLetter returns the stored dead letter id, nil if there is none.
func (g *Gateway) storedDeadLetter(ctx context.Context, id int64) (*store.DeadLetter, error) {
	all, err := g.store.ListDeadLetters(ctx, "")
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
