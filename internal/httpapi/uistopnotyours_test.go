package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/telemetry"
)

// notYoursRemote is a shared store that refuses every stop as of another
// principal's request, as the cluster's does when may says no.
type notYoursRemote struct{ elsewhereRemote }

var errStoreNotYours = errors.New("the request belongs to another principal")

func (notYoursRemote) Stop(context.Context, string, reach.StopMode, string, string, func(string, string) bool) (bool, *reach.Cause, error) {
	return true, nil, errStoreNotYours
}
func (notYoursRemote) NotYours(err error) bool { return errors.Is(err, errStoreNotYours) }

// TestUIStopNotYoursAsTheAPI: a stop of a request whose part here ended,
// which the shared store refuses as another principal's, is answered the
// same through the UI as through the API: 403 not_your_request, "Request
// … belongs to another principal.". Before, the UI answered 503 "could
// not be stopped" with the store's words, as if the store had failed.
func TestUIStopNotYoursAsTheAPI(t *testing.T) {
	rt := reach.New(nil)
	_, req, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r-ended", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	req.End()
	a := newAPI(&Options{Runtime: rt, Tools: noTools{}, Approvals: approval.New(nil), Stats: telemetry.NewStats(0), MaxBody: 1 << 20, MCP: http.NotFoundHandler(), Model: http.NotFoundHandler(),
		A2A: http.NotFoundHandler(), Metrics: http.NotFoundHandler(), Remote: &notYoursRemote{}})
	srv := httptest.NewServer(a.handler)
	t.Cleanup(srv.Close)
	type answer struct {
		status        int
		code, message string
	}
	read := func(resp *http.Response, err error) answer {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var out struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(body, &out)
		if out.Error.Code == "" {
			t.Logf("answer %d %q", resp.StatusCode, body)
		}
		return answer{resp.StatusCode, out.Error.Code, out.Error.Message}
	}
	api := read(http.Post(srv.URL+"/v1/requests/r-ended/cancel", "application/json", nil))
	if api.status != http.StatusForbidden || api.code != "not_your_request" {
		t.Fatalf("the API answers %+v; want 403 not_your_request", api)
	}
	page, err := http.Get(srv.URL + "/ui/requests/r-ended")
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(page.Body)
	page.Body.Close()
	m := regexp.MustCompile(`name="reach-csrf" content="([^"]+)"`).FindSubmatch(html)
	if m == nil {
		t.Fatalf("no form token on the request page (%d %.300s)", page.StatusCode, html)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ui := read(client.PostForm(srv.URL+"/ui/stop/r-ended", url.Values{"mode": {"cancel"}, "reason": {"runaway"}, "csrf": {string(m[1])}}))
	if ui != api {
		t.Errorf("the UI answers %+v; want what the API answers, %+v", ui, api)
	}
}
