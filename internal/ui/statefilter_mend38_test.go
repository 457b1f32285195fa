package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// The list's state filter takes the API's spellings of a state
// (waiting_for_approval, as GET /v1/requests?state= and the metrics name
// it) as well as the page's own, and a state it does not know is answered
// with a page saying so and naming the states there are, not with every
// request as if no filter were asked.
func TestMend38StateFilterSpellings(t *testing.T) {
	rt, stop := fiveStates(t)
	defer stop()
	aps := &fakeApprovals{items: []Approval{{ID: "ap9", Tool: "refund", Status: "pending", Request: "r-waiting"}}}
	srv := httptest.NewServer(New(Options{Runtime: rt, Approvals: aps}))
	defer srv.Close()
	for state, id := range map[string]string{
		"waiting_for_approval": "r-waiting", "waiting for approval": "r-waiting", "Waiting": "r-waiting",
		"RUNNING": "r-running", " done ": "r-done",
	} {
		got := rows(get(t, srv.URL+"/ui/?state="+url.QueryEscape(state)))
		if len(got) != 1 || got[id] == "" {
			t.Errorf("?state=%q lists %v, want only %s", state, got, id)
		}
	}
	if got := rows(get(t, srv.URL+"/ui/?state=all")); len(got) != 5 {
		t.Errorf("?state=all lists %v, want all five", got)
	}

	resp, err := http.Get(srv.URL + "/ui/?state=" + url.QueryEscape("pending<b>"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown state: %s, want 400", resp.Status)
	}
	if got := rows(page); len(got) != 0 {
		t.Errorf("an unknown state lists %v, want none", got)
	}
	if !strings.Contains(page, `id="bad-state"`) || !strings.Contains(page, "pending&lt;b&gt;") {
		t.Fatalf("the page does not say which state it did not know:\n%s", page)
	}
	bad := page[strings.Index(page, `id="bad-state"`):]
	bad = bad[:strings.Index(bad, "</p>")]
	for _, s := range []string{"running", "waiting_for_approval", "idle", "stopped", "done", "all"} {
		if !strings.Contains(bad, s) {
			t.Errorf("the message does not name the state %s: %s", s, bad)
		}
	}
}
