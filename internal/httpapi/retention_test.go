package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// storeWithLog opens a SQLite store in a temporary folder and an audit
// log on it, both closed when the test ends.
func storeWithLog(t *testing.T) (*sqlite.Store, *audit.Log) {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log, err := audit.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	return st, log
}

// A request the store's retention removed is answered 410 request_removed
// by the API and the UI, which say where its events are; the audit page
// names it without a link. A request never known is still 404, and so is
// a removed one when retention is off (nothing was removed by it).
func TestRemovedByRetention(t *testing.T) {
	ctx := t.Context()
	st, log := storeWithLog(t)
	old := time.Now().Add(-48 * time.Hour)
	for _, e := range []*audit.Event{
		{Time: old, Request: "gone", Principal: "alice", Kind: "tool", Name: "search_kb", Decision: "completed"},
		{Time: old, Request: "kept", Principal: "alice", Kind: "tool", Name: "search_kb", Decision: "completed"},
	} {
		if _, err := log.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutRequest(ctx, &store.Request{ID: "kept", Principal: "alice", State: "ended", Started: old}); err != nil {
		t.Fatal(err)
	}
	get := func(h http.Handler, path string) (int, string) {
		t.Helper()
		r := httptest.NewRequest("GET", "http://127.0.0.1:7400"+path, nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		b, _ := io.ReadAll(w.Result().Body)
		return w.Code, string(b)
	}
	rt := reach.New(&reach.Options{})
	a := newAPI(&Options{Runtime: rt, Store: st, Audit: log, Retention: 24 * time.Hour, Tools: noTools{}, Approvals: approval.New(nil), Metrics: http.NotFoundHandler(), MCP: http.NotFoundHandler(), Model: http.NotFoundHandler()})

	code, body := get(a.handler, "/v1/requests/gone")
	var e struct {
		Error struct{ Code, Message, Hint string } `json:"error"`
	}
	json.Unmarshal([]byte(body), &e)
	if code != http.StatusGone || e.Error.Code != "request_removed" || !strings.Contains(e.Error.Message, "removed from the store by retention") ||
		!strings.Contains(body, "reach audit show gone") {
		t.Errorf("GET /v1/requests/gone = %d %s; want 410 request_removed, saying where its events are", code, body)
	}
	if code, body := get(a.handler, "/v1/requests/never"); code != http.StatusNotFound || !strings.Contains(body, "unknown_request") {
		t.Errorf("GET /v1/requests/never = %d %s; want 404 unknown_request", code, body)
	}
	if code, body := get(a.handler, "/ui/requests/gone"); code != http.StatusGone || !strings.Contains(body, "removed from the store by retention") {
		t.Errorf("GET /ui/requests/gone = %d %s; want 410 saying so", code, body)
	}
	_, body = get(a.handler, "/ui/audit")
	if !strings.Contains(body, `gone <span class="muted"`) || strings.Contains(body, `href="/ui/requests/gone"`) ||
		!strings.Contains(body, `href="/ui/requests/kept"`) {
		t.Errorf("the audit page does not mark the removed request's rows (and only them):\n%s", body)
	}

	off := newAPI(&Options{Runtime: rt, Store: st, Audit: log, Tools: noTools{}, Approvals: approval.New(nil), Metrics: http.NotFoundHandler(), MCP: http.NotFoundHandler(), Model: http.NotFoundHandler()})
	if code, body := get(off.handler, "/v1/requests/gone"); code != http.StatusNotFound {
		t.Errorf("retention off: GET /v1/requests/gone = %d %s; want 404", code, body)
	}
}

// Only an id whose audit events show a request the store kept and
// retention could remove is answered 410: one that ran calls, or a
// hand-off's sub-request (a task's events under another root), and was
// not stopped. An id named only by an A2A task's or an approval's events
// (never a stored request), or by a stopped request's (retention never
// removes those: its row would still be there) is answered 404, as one
// unknown, however old its events.
func TestRemovedByRetentionOnlyWhatItRemoved(t *testing.T) {
	ctx := t.Context()
	st, log := storeWithLog(t)
	old := time.Now().Add(-48 * time.Hour)
	for _, e := range []*audit.Event{
		{Time: old, Request: "ran", Principal: "alice", Kind: "model", Name: "gpt", Decision: "completed"},
		{Time: old, Request: "task-only", Principal: "alice", Kind: "task", Name: "planner", Decision: "rejected", Reason: "refused"},
		{Time: old, Request: "handoff", Root: "ran", Principal: "alice", Kind: "task", Name: "planner", Decision: "completed", Reason: "state"},
		{Time: old, Request: "approval-only", Principal: "alice", Kind: "approval", Name: "write_file", Decision: "expired"},
		{Time: old, Request: "stopped", Principal: "alice", Kind: "tool", Name: "search_kb", Decision: "completed"},
		{Time: old, Request: "stopped", Principal: "alice", Kind: "stop", Name: "cancel", Guard: "operator"},
	} {
		if _, err := log.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	a := newAPI(&Options{Runtime: reach.New(&reach.Options{}), Store: st, Audit: log, Retention: 24 * time.Hour, Tools: noTools{}, Approvals: approval.New(nil), Metrics: http.NotFoundHandler(), MCP: http.NotFoundHandler(), Model: http.NotFoundHandler()})
	for id, want := range map[string]int{"ran": http.StatusGone, "handoff": http.StatusGone, "task-only": http.StatusNotFound, "approval-only": http.StatusNotFound, "stopped": http.StatusNotFound} {
		for _, path := range []string{"/v1/requests/" + id, "/ui/requests/" + id} {
			r := httptest.NewRequest("GET", "http://127.0.0.1:7400"+path, nil)
			w := httptest.NewRecorder()
			a.handler.ServeHTTP(w, r)
			body := w.Body.String()
			if w.Code != want {
				t.Errorf("GET %s = %d %s; want %d", path, w.Code, body, want)
			}
			if want == http.StatusGone && !strings.Contains(body, "its audit events show it ran,") {
				t.Errorf("GET %s does not say what its events show: %s", path, body)
			}
			if want == http.StatusNotFound && strings.Contains(body, "retention") {
				t.Errorf("GET %s says the request was removed by retention: %s", path, body)
			}
		}
	}
	r := httptest.NewRequest("GET", "http://127.0.0.1:7400/ui/audit", nil)
	w := httptest.NewRecorder()
	a.handler.ServeHTTP(w, r)
	page := w.Body.String()
	if !strings.Contains(page, `ran <span class="muted"`) {
		t.Errorf("the audit page does not mark the removed request's rows:\n%s", page)
	}
	for _, id := range []string{"task-only", "approval-only", "stopped"} {
		if strings.Contains(page, id+` <span class="muted"`) {
			t.Errorf("the audit page marks %s removed by retention:\n%s", id, page)
		}
	}
}
