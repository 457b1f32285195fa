package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/httpjson"
)

// TestUIAnswersForbidFraming: whatever answers under /ui — the UI, the
// redirect of /ui, the 401 of a caller without credentials, the gateway's
// refusal of a cross-origin post — forbids framing by other sites.
func TestUIAnswersForbidFraming(t *testing.T) {
	_, srvURL, _, keys := authGateway(t, "")
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		method, path, key, site string
		status                  int
	}{
		{"GET", "/ui/", "dave", "", 200},
		{"GET", "/ui", "dave", "", 302},
		{"GET", "/ui/", "", "", 303},             // a browser without a session: to the login page
		{"GET", "/ui/", "rk_not_a_key", "", 401}, // wrong credentials in the headers
		{"GET", "/ui/login", "", "", 200},
		{"GET", "/ui/approvals", "alice", "", 200},
		{"POST", "/ui/stop/r1", "dave", "cross-site", 403},
	} {
		r, _ := http.NewRequest(tc.method, srvURL+tc.path, strings.NewReader("mode=cancel&reason=x"))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if k, ok := keys[tc.key]; ok {
			r.Header.Set("Authorization", "Bearer "+k)
		} else if tc.key != "" {
			r.Header.Set("Authorization", "Bearer "+tc.key)
		}
		if tc.site != "" {
			r.Header.Set("Sec-Fetch-Site", tc.site)
		}
		resp, err := c.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != tc.status || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s %s = %d, CSP %q, X-Frame-Options %q; want %d, frame-ancestors 'none' and DENY",
				tc.method, tc.path, resp.StatusCode, h.Get("Content-Security-Policy"), h.Get("X-Frame-Options"), tc.status)
		}
	}
}

// TestCrossOriginRefusalIsJSON: a browser's cross-origin post to any
// route is refused with 403 and the API's JSON error, not text.
func TestCrossOriginRefusalIsJSON(t *testing.T) {
	g := newTestGateway(t, nil)
	srvURL := serveTest(t, g).URL
	for _, p := range []string{"/v1/calls", "/mcp", "/v1/requests/x/cancel", "/ui/stop/x"} {
		r, _ := http.NewRequest("POST", srvURL+p, strings.NewReader(`{}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Origin", "https://evil.example")
		r.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct{ Error httpjson.Error }
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Content-Type") != "application/json" ||
			json.Unmarshal(body, &e) != nil || e.Error.Code != "cross_origin" || e.Error.Message == "" || e.Error.Suggestion == "" {
			t.Errorf("cross-origin POST %s = %d %s %q, want 403 and the JSON error cross_origin", p, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
}
