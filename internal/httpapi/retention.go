package httpapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/ui"
)

// removedTimeout bounds the reads that tell a request removed by retention
// from one never known.
const removedTimeout = 5 * time.Second

// removed reports whether request id, which neither the runtime nor the
// store knows, was removed by the retention sweep (docs/STATE.md,
// "Retention"), and whether r may be told so: the store keeps no such
// request, and the audit log, which retention never prunes, holds events
// of it, the newest older than the retention, that show a request the
// store kept and retention could remove (removedByRetention). Only an operator, or the
// principal (and tenant) its events name, is told; anyone else gets the
// answer of an unknown request, as for a request never made.
func (a *API) removed(r *http.Request, id string) (last time.Time, ok bool) {
	if a.retention <= 0 || a.store == nil || id == "" {
		return time.Time{}, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), removedTimeout)
	defer cancel()
	first, last, gone := goneByRetention(ctx, a.store, id)
	if !gone {
		return time.Time{}, false
	}
	if time.Since(last) < a.retention {
		return time.Time{}, false
	}
	if !a.operatesOn(r, first.Tenant) {
		me, ok := auth.IdentityFrom(r.Context())
		if !ok || me.Principal != first.Principal || me.Tenant != first.Tenant {
			return time.Time{}, false
		}
	}
	return last, true
}

// goneByRetention reports whether the store keeps no request id and the
// audit log's events of it show one that retention removed
// (removedByRetention), with the first of those events and the time of the
// last. The events are read goneScanPage at a time (a page held, not the
// request: 175 MB allocated for 100,000 events when it read them all), up
// to the log's head when it began, and no further than a stop.
func goneByRetention(ctx context.Context, st store.Store, id string) (first *audit.Event, last time.Time, gone bool) {
	if _, err := st.GetRequest(ctx, id); !errors.Is(err, store.ErrNotFound) {
		return nil, time.Time{}, false
	}
	head, _, err := st.AuditHead(ctx)
	if err != nil {
		return nil, time.Time{}, false
	}
	page := goneScanPage
	if _, ok := st.(store.RequestsAuditor); !ok {
		page = math.MaxInt // a store that reads no page alone: its whole log, once
	}
	var r retentionScan
	for after := int64(0); ; {
		evs, err := audit.ShowRequests(ctx, st, []string{id}, after, head, page)
		if err != nil || len(evs) > 0 && evs[0].Seq <= after {
			return nil, time.Time{}, false
		}
		if len(evs) > 0 {
			if first == nil {
				first = evs[0]
			}
			last, after = evs[len(evs)-1].Time, evs[len(evs)-1].Seq
		}
		if !r.add(evs) {
			return nil, time.Time{}, false
		}
		if len(evs) < page {
			return first, last, r.ran
		}
	}
}

// goneScanPage is how many of a request's events goneByRetention reads at
// a time.
const goneScanPage = 1000

// removedByRetention reports whether the events of a request that the
// store no longer keeps show one that it kept and that retention removed:
// the request ran calls (a frame's event: a request is stored when it
// begins, before its first call) or was a hand-off's sub-request (a task's
// event under another root request), and was not stopped (a stopped request
// is never removed: its row refuses its id). Events of an id that names no
// stored request (an A2A task's or an approval's alone, a request whose
// row was never written) are not taken for a removed request: its id is
// answered as one unknown.
func removedByRetention(evs []*audit.Event) bool {
	var r retentionScan
	return r.add(evs) && r.ran
}

// retentionScan is removedByRetention over a request's events given a
// page at a time: add returns false at a stop (the request was not
// removed); ran says whether it ran.
type retentionScan struct{ ran bool }

func (r *retentionScan) add(evs []*audit.Event) bool {
	for _, e := range evs {
		switch e.Kind {
		case "stop":
			return false
		case "tool", "model", "delegate":
			r.ran = true
		case "task":
			// A hand-off's sub-request (its root another request): Delegate
			// begins it, stored, before its task is sent.
			r.ran = r.ran || e.Root != "" && e.Root != e.Request
		}
	}
	return true
}

// removedMessage says that request id was removed by retention, and where
// what is left of it is.
func (a *API) removedMessage(id string, last time.Time) (msg, hint string) {
	return fmt.Sprintf("Request %s was removed from the store by retention: its audit events show it ran, the last more than %s ago (%s), and finished state is kept for %s.",
			id, formatRetention(a.retention), last.UTC().Format(time.RFC3339), formatRetention(a.retention)),
		fmt.Sprintf("Its audit events remain: reach audit show %s (GET /v1/audit?request=%s). To keep requests longer, set retention: in the configuration (\"forever\" keeps all).",
			id, url.QueryEscape(id))
}

// writeRemoved answers 410 request_removed for request id.
func (a *API) writeRemoved(w http.ResponseWriter, id string, last time.Time) {
	msg, hint := a.removedMessage(id, last)
	httpjson.WriteError(w, http.StatusGone, "request_removed", msg, hint)
}

// uiRemoved is the UI's Removed: the text of its answer for a request
// removed by retention.
func (a *API) uiRemoved(r *http.Request, id string) (string, bool) {
	last, ok := a.removed(r, id)
	if !ok {
		return "", false
	}
	msg, hint := a.removedMessage(id, last)
	return msg + " " + hint, true
}

// formatRetention writes d in days when it is whole days.
func formatRetention(d time.Duration) string {
	if d == 24*time.Hour {
		return "1 day"
	}
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}

// markRemoved marks the rows of the requests the store's retention
// removed: only rows older than the retention can be, and each of their
// requests is looked up once (its events too, when the store has no such
// request: removedByRetention).
func (a auditView) markRemoved(ctx context.Context, rows []ui.AuditRow) {
	if a.retention <= 0 {
		return
	}
	old := time.Now().Add(-a.retention)
	gone := map[string]bool{}
	for i := range rows {
		row := &rows[i]
		if row.Request == "" || !row.Time.Before(old) {
			continue
		}
		g, seen := gone[row.Request]
		if !seen {
			_, _, g = goneByRetention(ctx, a.st, row.Request)
			gone[row.Request] = g
		}
		row.Removed = g
	}
}
