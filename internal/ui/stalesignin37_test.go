package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// With sign-in (auth:), a form sent from a page loaded before the gateway
// restarted carries a session cookie the new process does not know: a
// browser is answered by a page of the UI saying nothing was done, its
// link through the sign-in back to the form's page (it was the JSON error
// "unauthenticated"); a client that does not ask for HTML still gets the
// JSON error.
func TestStaleFormSignedOutAfterRestart(t *testing.T) {
	srv := httptest.NewServer(New(Options{Runtime: reach.New(nil), Login: twoPrincipals()}))
	t.Cleanup(srv.Close)
	post := func(accept string) (*http.Response, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/ui/approvals/ap1/approve", strings.NewReader(url.Values{"csrf": {"old-token"}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", srv.URL)
		req.Header.Set("Accept", accept)
		req.AddCookie(&http.Cookie{Name: "reach_session", Value: "a-session-of-the-process-before"})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	resp, body := post("text/html,application/xhtml+xml")
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, "nothing was done") || !strings.Contains(body, `href="/ui/login?next=`) {
		t.Errorf("a browser's stale form, signed out: %d %s\n%.600s\nwant 401, a page of the UI linking the sign-in", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	resp, body = post("application/json")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `"unauthenticated"`) {
		t.Errorf("a client's stale form, signed out: %d %.300s; want 401 unauthenticated as JSON", resp.StatusCode, body)
	}
}
