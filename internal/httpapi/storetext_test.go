package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/policy/approval"
)

// downRemote is a shared store that does not answer: its driver's error
// names the database's host, user and address.
type downRemote struct{ elsewhereRemote }

var errDriver = errors.New(`failed to connect to host=db-7.internal user=reach_rw database=reach: dial tcp 10.9.8.7:5432: connect: connection refused`)

func (downRemote) End(context.Context, string, func(string, string) bool) (bool, error) {
	return false, errDriver
}
func (downRemote) Stop(context.Context, string, reach.StopMode, string, string, func(string, string) bool) (bool, *reach.Cause, error) {
	return false, nil, errDriver
}

// TestStoreUnavailableTellsNoDriverText: ending or cancelling a request
// through the API while the shared store does not answer is refused 503
// store_unavailable, saying what could not be done and to try again; the
// driver's own text (its host, user, address) goes to the log with the
// request, not to the client. Before, the answer quoted it.
func TestStoreUnavailableTellsNoDriverText(t *testing.T) {
	st, log := storeWithLog(t)
	var logs bytes.Buffer
	a := newAPI(&Options{Runtime: reach.New(&reach.Options{}), Store: st, Audit: log, Tools: noTools{}, Remote: &downRemote{},
		Approvals: approval.New(nil), Metrics: http.NotFoundHandler(), MCP: http.NotFoundHandler(), Model: http.NotFoundHandler(),
		A2A: http.NotFoundHandler(), MaxBody: 1 << 20, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, c := range []struct{ path, body string }{
		{"/v1/requests/r-far/end", ``},
		{"/v1/requests/r-far/cancel", `{}`},
	} {
		logs.Reset()
		r := httptest.NewRequest("POST", "http://127.0.0.1:7400"+c.path, strings.NewReader(c.body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		a.handler.ServeHTTP(w, r)
		b, _ := io.ReadAll(w.Result().Body)
		body := string(b)
		if w.Code != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"store_unavailable"`) || !strings.Contains(body, "Try again") {
			t.Errorf("POST %s = %d %s; want 503 store_unavailable, to try again", c.path, w.Code, body)
		}
		for _, s := range []string{"db-7.internal", "reach_rw", "10.9.8.7", "connection refused"} {
			if strings.Contains(body, s) {
				t.Errorf("POST %s = %s: tells the driver's %q", c.path, body, s)
			}
		}
		if l := logs.String(); !strings.Contains(l, "request=r-far") || !strings.Contains(l, "db-7.internal") {
			t.Errorf("POST %s: log %q; want the driver's error with the request", c.path, l)
		}
	}
}
