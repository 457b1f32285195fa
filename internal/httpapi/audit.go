package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/ui"
)

// auditView adapts the audit log to the UI's audit page.
type auditView struct {
	st store.Store
	vc *verifyCache
	// flush commits the events the log has queued (nil without a log), so
	// that a reader sees every event recorded before it asked: the answer
	// to a call can reach its client before its event's batch commits.
	flush func(context.Context) error
	// retention is the store's (0: it keeps all): a row of a request it
	// removed says so (markRemoved).
	retention time.Duration
	// red masks what is shown with the secrets configured now (nil: none).
	// An event was masked with those configured when it was recorded; a
	// value configured later (a credential an upstream leaked, found and
	// added to the secrets file) is in the events recorded before.
	red *redact.Redactor
	// full reports whether the viewer whose request ctx is sees the
	// whole log's figures (Verify): a global operator; nil for everyone.
	full func(ctx context.Context) bool
}

// show returns e as GET /v1/audit shows it: its JSON, masked with the
// secrets configured now.
func (a auditView) show(e *audit.Event) json.RawMessage {
	b := e.AppendJSON(nil)
	if a.red != nil {
		b = a.red.Redact(b)
	}
	return b
}

// showString is s masked with the secrets configured now.
func (a auditView) showString(s string) string {
	if a.red == nil {
		return s
	}
	return a.red.RedactString(s)
}

func newAuditView(st store.Store, log *audit.Log) auditView {
	v := auditView{st: st, vc: &verifyCache{verify: func(ctx context.Context) (*audit.Report, error) { return audit.Verify(ctx, st) }}}
	if log != nil {
		v.flush = log.Flush
	}
	return v
}

// Verify says whether the chain verifies: with how many events and its
// head to a global operator (full, nil: everyone), which count and change
// with every tenant's events; to anyone else whether it verifies, and
// where it breaks.
func (a auditView) Verify(ctx context.Context) (bool, string) {
	ok, msg, ago := a.vc.check(ctx)
	if ok && a.full != nil && !a.full(ctx) {
		msg = "the chain verifies"
	}
	return ok, msg + ago
}

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
	ok, msg, ago := c.check(ctx)
	return ok, msg + ago
}

// check is get with the message and, for a verification kept from
// before, " (checked ... ago)" apart.
func (c *verifyCache) check(ctx context.Context) (ok bool, msg, ago string) {
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && now().Sub(c.at) < verifyFor {
		return c.ok, c.msg, fmt.Sprintf(" (checked %s ago)", now().Sub(c.at).Round(time.Second))
	}
	rep, err := c.verify(ctx)
	if ctx.Err() != nil { // the viewer left: keep nothing of a cut walk
		return false, "not checked: " + ctx.Err().Error(), ""
	}
	c.at = now()
	if err != nil {
		c.ok, c.msg = false, err.Error()
	} else {
		c.ok, c.msg = true, fmt.Sprintf("%d events, head %s", rep.Events, audit.FormatHash(rep.Head))
	}
	return c.ok, c.msg, ""
}

func (a auditView) Search(ctx context.Context, q ui.AuditQuery, limit int) ([]ui.AuditRow, int64, error) {
	evs, stop, err := a.page(ctx, q, limit)
	if err != nil {
		return nil, 0, err
	}
	rows := make([]ui.AuditRow, 0, len(evs))
	for _, e := range evs {
		reason := e.Message
		if e.Code != "" {
			reason = e.Code + ": " + reason
		}
		if e.Instance != "" {
			reason += " (instance " + e.Instance + ")"
		}
		rows = append(rows, ui.AuditRow{Seq: e.Seq, Time: e.Time, Request: a.showString(e.Request), Principal: e.Principal,
			Frame: e.Frame, Name: a.showString(e.Name), Decision: e.Decision, Reason: a.showString(reason)})
	}
	a.markRemoved(ctx, rows)
	return rows, stop, nil
}

// events is page without its stop.
func (a auditView) events(ctx context.Context, q ui.AuditQuery, limit int) ([]*audit.Event, error) {
	evs, _, err := a.page(ctx, q, limit)
	return evs, err
}

// page returns the newest limit events that q selects: a request's, or
// the most recent ones, filtered by tool, principal and owner; or a page
// of a tree (treePage), with stop, the cursor of the next page when this
// one ended short of limit having read maxTreeScan events, or when a
// request's page (without Tree) is full and older events are left (0
// otherwise).
func (a auditView) page(ctx context.Context, q ui.AuditQuery, limit int) ([]*audit.Event, int64, error) {
	if a.flush != nil {
		a.flush(ctx) // a log that is closing or failing has said so in its own log; read what is committed
	}
	if q.Tree && q.Request != "" {
		return a.treePage(ctx, q, limit)
	}
	var evs []*audit.Event
	var err error
	if q.Request != "" {
		if (q.Owner != nil || q.Tenant != "") && !a.mayRead(ctx, q.Request, q) {
			return nil, 0, nil // none of its events are the viewer's
		}
		if evs, stop, ok, err := a.requestPage(ctx, q, limit); ok {
			return evs, stop, err
		}
		evs, err = audit.Show(ctx, a.st, q.Request)
	} else {
		if evs, stop, ok, err := a.logPage(ctx, q, limit); ok { // the store filters, so that the page is full
			return evs, stop, err
		}
		fetch := limit
		if q.Owner != nil || q.Tenant != "" || q.Tool != "" || q.Principal != "" {
			fetch = min(limit*10, 10000) // the filter keeps some of them
		}
		evs, err = audit.Recent(ctx, a.st, fetch)
	}
	if err != nil {
		return nil, 0, err
	}
	evs = slices.DeleteFunc(evs, func(e *audit.Event) bool { return drops(q, e) })
	if len(evs) > limit {
		evs = evs[len(evs)-limit:]
		if q.Request != "" { // a request's full page, read whole: the older events are the next page's
			return evs, evs[0].Seq, nil
		}
	}
	return evs, 0, nil
}

// logPage returns the newest limit events of the log that q keeps (before
// the cursor q.Before, if set): a tenant's (q.Tenant, its operator's
// view), one principal's in its tenant (q.Owner, the view of one who is
// not an operator), or everyone's (a global operator's), filtered by
// principal and tool; and true, when the store filters them in its query
// (store.AuditMatcher). A page that matches every record (a global
// operator's, unfiltered), or a tenant's events alone from a store with
// an index on the tenant (store.AuditTenantIndexer), reads those events,
// however many others came after them. Another (?principal=, ?tool=, one
// principal's view, or a store without the index) reads at most the
// maxTreeScan records before the cursor (or the log's head), as a
// request's page does, so that a filter nothing matches
// (?principal=nobody) reads those, not the whole log. stop is the next
// page's cursor: the seq of the oldest event of a full page while older
// ones are left (its read asks for one more, which says so), or of the
// oldest record a page that ended short could read while older records
// are unread (0 otherwise). Before, only a tenant's operator's page was
// read so, and only one that ended short had the cursor: the UI's audit
// page showed the newest 500 events with no way to the older ones.
func (a auditView) logPage(ctx context.Context, q ui.AuditQuery, limit int) ([]*audit.Event, int64, bool, error) {
	if _, ok := a.st.(store.AuditMatcher); !ok {
		return nil, 0, false, nil
	}
	if limit <= 0 {
		return nil, 0, true, nil
	}
	m := store.AuditMatch{Tenant: q.Tenant, Principal: q.Principal, Name: q.Tool}
	if q.Owner != nil {
		m.Tenant, m.Principal = q.Owner.Tenant, q.Owner.Principal // "" is any tenant: drops keeps the owner's
	}
	before := q.Before
	if before == 0 {
		head, _, err := a.st.AuditHead(ctx)
		if err != nil {
			return nil, 0, true, err
		}
		before = head + 1
	}
	after := max(before-1-maxTreeScan, 0)
	ix, indexed := a.st.(store.AuditTenantIndexer)
	if m == (store.AuditMatch{}) || indexed && ix.AuditTenantIndexed() && m.Tenant != "" && m.Principal == "" && m.Name == "" {
		after = 0 // every record matches, or the index finds the tenant's events alone
	}
	m.After = after
	evs, ok, err := audit.Matching(ctx, a.st, m, before, limit+1)
	if !ok || err != nil {
		return nil, 0, ok, err
	}
	var stop int64
	if len(evs) > limit { // full, with older events left: the next page is theirs
		evs = evs[1:]
		stop = evs[0].Seq
	} else if after > 0 { // short, with older records unread: the next page reads on from here
		stop = after + 1
	}
	evs = slices.DeleteFunc(evs, func(e *audit.Event) bool { return drops(q, e) })
	return evs, stop, true, nil
}

// requestPage returns the newest limit events of request q.Request that
// q keeps (before the cursor q.Before, if set), and true, when the store
// reads a request's newest events alone (store.RequestAuditPager): read
// newest first, a page of limit, then, as a tree's page does, chunks of
// max(limit, treeScanChunk) while q's filters leave some out, until limit
// are kept or none is left, so that what is held is a chunk, not the
// request's whole log (108 MB for 100,000 events, to show 100), and a
// filter that keeps little makes a read a chunk, not a read a page (with
// ?limit=1, one a record). A page that has read maxTreeScan events
// without filling ends short, as a tree's does: stop is then the seq of
// the oldest event it read, the next page's cursor; before, a filter that
// kept nothing read the whole request for one page. A full page's stop is
// the seq of its oldest event while there are older ones (its first read
// is of limit+1 events, the one more says so), so that a client pages
// back to the request's first event; the page that reaches it has none
// (0). Before, a full page had no cursor and the older events of a
// request whose newest filled it could not be read.
func (a auditView) requestPage(ctx context.Context, q ui.AuditQuery, limit int) ([]*audit.Event, int64, bool, error) {
	if _, ok := a.st.(store.RequestAuditPager); !ok {
		return nil, 0, false, nil
	}
	if limit <= 0 {
		return nil, 0, true, nil
	}
	var out []*audit.Event
	before := q.Before
	scanned := 0
	for chunk := limit + 1; ; chunk = max(limit, treeScanChunk) { // one more than the page says whether there are older events
		if scanned >= maxTreeScan && before > 0 { // the page stops short; the next one reads on from here
			return out, before, true, nil
		}
		evs, ok, err := audit.ShowBefore(ctx, a.st, q.Request, before, chunk)
		if !ok || err != nil {
			return nil, 0, ok, err
		}
		scanned += len(evs)
		if len(evs) > 0 {
			if before != 0 && evs[0].Seq >= before {
				return nil, 0, true, fmt.Errorf("the store read request %s's events before %d from %d", q.Request, before, evs[0].Seq)
			}
			before = evs[0].Seq
		}
		full := len(evs) == chunk // older events are left unread
		more := full
		evs = slices.DeleteFunc(evs, func(e *audit.Event) bool { return drops(q, e) })
		if n := limit - len(out); len(evs) > n {
			evs, more = evs[len(evs)-n:], true
		}
		out = append(evs, out...)
		if len(out) >= limit && more { // a full page: the older events are the next page's, before its oldest
			return out, out[0].Seq, true, nil
		}
		if len(out) >= limit || !full { // the request's first event was read
			return out, 0, true, nil
		}
	}
}

// mayRead reports whether one who is not a global operator (q.Owner, or
// an operator of q.Tenant) may have the events of request id read for
// them: the registry holds no other principal's (or other tenant's)
// request of that id (a request just begun, or one the
// retention removed, is read and its events filtered one by one). Another's
// request is not read: reading it cost as much as its events (185 MB and
// seconds for 100,000 of them, any principal asking any request's id), and
// the cost told how many it had. A registry it cannot read is read past.
func (a auditView) mayRead(ctx context.Context, id string, q ui.AuditQuery) bool {
	r, err := a.st.GetRequest(ctx, id)
	return err != nil || !otherRoot(q, r)
}

// otherRoot reports whether request r is not of the viewer of q: another
// principal's for one who is not an operator (q.Owner), another tenant's
// for a tenant's operator (q.Tenant).
func otherRoot(q ui.AuditQuery, r *store.Request) bool {
	return q.Owner != nil && (r.Principal != q.Owner.Principal || r.Tenant != q.Owner.Tenant) || q.Tenant != "" && r.Tenant != q.Tenant
}

// maxTreeRequests bounds the requests of a tree whose events one page of
// GET /v1/audit?tree=1 reads (the root and its sub-requests, breadth
// first); the events of any further ones are not shown (treeEvents says so).
const maxTreeRequests = 1000

// errTreeTooLarge is treeEvents' error for a tree of more than
// maxTreeRequests requests.
var errTreeTooLarge = fmt.Errorf("the tree has more than %d requests", maxTreeRequests)

// drops reports whether q's filters leave e out.
func drops(q ui.AuditQuery, e *audit.Event) bool {
	return (q.Before > 0 && e.Seq >= q.Before) || (q.Tool != "" && e.Name != q.Tool) || (q.Principal != "" && e.Principal != q.Principal) ||
		(q.Owner != nil && (e.Principal != q.Owner.Principal || e.Tenant != q.Owner.Tenant)) || (q.Tenant != "" && e.Tenant != q.Tenant)
}

// treePage returns a page of the events of request q.Request and of its
// sub-requests (the store's registry, as reach audit show --tree reads
// it): the oldest limit that q's filters keep after the cursor q.After, in
// seq order, each naming its request, up to the log's head as it was
// before they were read. A store that reads a set of requests' events
// (store.RequestsAuditor) reads the page alone, in one snapshot; another
// reads each request's events in a read of its own, where an event
// committed between two of them (one of the root's, read first, numbered
// before one of a sub-request's, read after) would be missing from a page
// that ends past it, and the next page's cursor would skip it for good. A
// batch commits with the head it moves (its seqs taken in order under the
// head's lock), so every event up to the head read first is there to read;
// those after it are the next page's. A page that has read maxTreeScan
// events without filling ends short: stop is then the seq of the last
// event it read, the next page's cursor (0 otherwise).
//
// One who is not an operator (q.Owner) sees nothing of another's tree: the
// root's owner is checked before the tree is walked, so that neither the
// walk's cost nor errTreeTooLarge tells of it. A root the registry does
// not hold yet (a request just begun) is its own tree, its events shown
// as the single request's page shows them.
func (a auditView) treePage(ctx context.Context, q ui.AuditQuery, limit int) ([]*audit.Event, int64, error) {
	head, _, err := a.st.AuditHead(ctx)
	if err != nil {
		return nil, 0, err
	}
	ids := []string{q.Request}
	root, err := a.st.GetRequest(ctx, q.Request)
	switch {
	case errors.Is(err, store.ErrNotFound) && (q.Owner != nil || q.Tenant != ""):
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, 0, err
	case otherRoot(q, root):
		return nil, 0, nil // as the single request's page: none of its events are the viewer's
	default:
		if ids, err = a.treeRequests(ctx, q.Request); err != nil {
			return nil, 0, err
		}
	}
	var out []*audit.Event
	scanned := 0
	for after, chunk := q.After, limit; len(out) < limit; chunk = max(limit, treeScanChunk) { // the filters may leave some out: read on
		if scanned >= maxTreeScan { // the page stops short; the next one reads on from here
			return out, after, nil
		}
		evs, err := audit.ShowRequests(ctx, a.st, ids, after, head, chunk)
		if err != nil {
			return nil, 0, err
		}
		scanned += len(evs)
		for _, e := range evs {
			if !drops(q, e) {
				out = append(out, e)
			}
		}
		if len(evs) < chunk {
			break
		}
		after = evs[len(evs)-1].Seq
	}
	return out[:min(len(out), limit)], 0, nil
}

// maxTreeScan bounds the events one page of a tree, or of a request, reads when its filters
// (a tool, a principal, the viewer's own events) leave most out: past it
// the page ends short, with the cursor of the last event read, so that one
// GET does a bounded amount of work however many events the tree holds
// (before, a page of 1 that no event matched read the whole tree, 2 at a
// time). treeScanChunk is what each read after the first asks for.
const (
	maxTreeScan   = 10000
	treeScanChunk = 1000
)

// treeRequests returns root and its sub-requests (in one read of a
// store.RequestTreer, else breadth first, a list a request), or
// errTreeTooLarge for more than maxTreeRequests of them.
func (a auditView) treeRequests(ctx context.Context, root string) ([]string, error) {
	if rt, ok := a.st.(store.RequestTreer); ok {
		ids, err := rt.RequestTree(ctx, root, maxTreeRequests+1)
		if err == nil && len(ids) > maxTreeRequests {
			err = errTreeTooLarge
		}
		return ids, err
	}
	ids := []string{root}
	seen := map[string]bool{root: true}
	for i := 0; i < len(ids); i++ {
		subs, err := a.st.ListRequests(ctx, store.RequestFilter{Parent: ids[i], Limit: maxTreeRequests + 1})
		if err != nil {
			return nil, err
		}
		for _, sub := range subs {
			if seen[sub.ID] {
				continue
			}
			if len(ids) == maxTreeRequests {
				return nil, errTreeTooLarge
			}
			seen[sub.ID] = true
			ids = append(ids, sub.ID)
		}
	}
	return ids, nil
}

// auditEvents is GET /v1/audit[?request=ID][&tool=NAME][&principal=P][&limit=N]:
// the newest N (default 100, at most 1000) events of one request, or of
// the newest events of the log (ten times N when filtered), oldest first.
// With &tree=1 (and request), the request's and its sub-requests' events
// in seq order, a page of N after the cursor &after=SEQ (0: from the
// first), with "next" (the cursor of the following page) when there are
// more. A page without tree (a request's, or the log's) that read
// maxTreeScan events before it filled ends short with "before", the cursor
// of the page of its older events (&before=SEQ); a full one with older
// events has it too. A principal who is not an operator sees only
// its own events, in its tenant.
func (a *API) auditEvents(w http.ResponseWriter, r *http.Request) {
	if a.store == nil {
		httpjson.WriteError(w, http.StatusNotFound, "no_store", "This gateway keeps no audit log (no data folder).", "Start it with --data.")
		return
	}
	limit := 100
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			httpjson.WriteError(w, http.StatusBadRequest, "bad_limit", "The limit is a number from 1 to 1000.", "Send ?limit=100, or leave it out.")
			return
		}
		limit = n
	}
	q := ui.AuditQuery{Request: r.URL.Query().Get("request"), Tool: r.URL.Query().Get("tool"), Principal: r.URL.Query().Get("principal")}
	switch t := r.URL.Query().Get("tree"); t {
	case "", "0", "false":
	case "1", "true":
		q.Tree = true
	default:
		httpjson.WriteError(w, http.StatusBadRequest, "bad_tree", fmt.Sprintf("tree=%q is neither 1 nor 0.", t), "Send &tree=1 with ?request=ID for the request and its sub-requests.")
		return
	}
	if q.Tree && q.Request == "" {
		httpjson.WriteError(w, http.StatusBadRequest, "bad_tree", "tree=1 is the tree of one request: the request is missing.", "Send ?request=ID&tree=1.")
		return
	}
	if s := r.URL.Query().Get("after"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || !q.Tree {
			httpjson.WriteError(w, http.StatusBadRequest, "bad_after", "after is the cursor of a tree's pages: a seq (a whole number), with tree=1.",
				`Send the "next" of the last page as &after=, with ?request=ID&tree=1.`)
			return
		}
		q.After = n
	}
	if t, ok := a.operatorOf(r); ok {
		q.Tenant = t // a tenant's operator: its tenant's events
	} else if !a.isOperator(r) {
		a := uiActor(r)
		q.Principal, q.Owner = a.Principal, &a
	}
	if s := r.URL.Query().Get("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 || q.Tree {
			httpjson.WriteError(w, http.StatusBadRequest, "bad_before", "before is the cursor of the log's and of a request's pages: a seq (a whole number), without tree=1.",
				`Send the "before" of the last page as &before=, with the same query.`)
			return
		}
		q.Before = n
	}
	fetch := limit
	if q.Tree {
		fetch++ // one more says there is a next page
	}
	evs, stop, err := a.auditV.page(r.Context(), q, fetch)
	if errors.Is(err, errTreeTooLarge) {
		httpjson.WriteError(w, http.StatusUnprocessableEntity, "tree_too_large", fmt.Sprintf("Request %s: %s.", q.Request, err),
			"Ask for the events of its sub-requests one by one (?request=ID, or with tree=1 on a sub-request); GET /v1/requests/{id} lists a request's children.")
		return
	}
	if err != nil {
		httpjson.WriteError(w, http.StatusInternalServerError, "store", err.Error(), "Look at the gateway's log.")
		return
	}
	next := stop // a page that read its bound of events before it filled
	if q.Tree && len(evs) > limit {
		evs = evs[:limit]
		next = evs[limit-1].Seq
	}
	type eventJSON struct {
		Seq     int64           `json:"seq"`
		Time    time.Time       `json:"time"`
		Request string          `json:"request"`
		Event   json.RawMessage `json:"event"` // as the log stores it, masked with the secrets configured now too
	}
	out := make([]eventJSON, len(evs))
	for i, e := range evs {
		out[i] = eventJSON{Seq: e.Seq, Time: e.Time, Request: a.auditV.showString(e.Request), Event: a.auditV.show(e)}
	}
	body := map[string]any{"events": out}
	switch {
	case next > 0 && q.Tree:
		body["next"] = next
	case next > 0:
		body["before"] = next // a page that is full or read its bound of events: the older ones are the next page's
	}
	httpjson.Write(w, http.StatusOK, body)
}

// auditVerify is GET /v1/audit/verify: whether the hash chain of the whole
// log holds (checked at most every verifyFor, see verifyCache).
func (a *API) auditVerify(w http.ResponseWriter, r *http.Request) {
	if a.store == nil {
		httpjson.WriteError(w, http.StatusNotFound, "no_store", "This gateway keeps no audit log (no data folder).", "Start it with --data.")
		return
	}
	ok, msg := a.auditV.Verify(r.Context()) // the figures for a global operator only
	httpjson.Write(w, http.StatusOK, map[string]any{"ok": ok, "message": msg})
}
