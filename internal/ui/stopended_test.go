package ui

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestStopFromUIOfAnEndedRequest: a Stop form posted for a request that
// ended meanwhile (a page opened while it ran) changes nothing: the
// request stays completed, and the page says the stop changed nothing.
// Before, the request was stopped and its undos ran.
func TestStopFromUIOfAnEndedRequest(t *testing.T) {
	srv, _, req, _ := setup(t)
	req.End()
	resp := post(t, srv.URL, "/ui/stop/r1", url.Values{"mode": {"cancel"}, "reason": {"runaway"}})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasSuffix(resp.Header.Get("Location"), "?flash=not_stopped") {
		t.Fatalf("stop of an ended request: %s to %q; want 303 to ?flash=not_stopped", resp.Status, resp.Header.Get("Location"))
	}
	if req.State() != "completed" || req.StopCause() != nil {
		t.Fatalf("state %s cause %+v; want completed, no cause", req.State(), req.StopCause())
	}
	page := get(t, srv.URL+"/ui/requests/r1?flash=not_stopped")
	if !strings.Contains(page, "Your stop changed nothing") {
		t.Error("the request page does not say the stop changed nothing")
	}
	if strings.Contains(page, `action="/ui/stop/r1"`) {
		t.Error("the page of an ended request offers its stop")
	}
}
