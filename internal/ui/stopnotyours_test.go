package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestStopFromUIOfAnotherPrincipalsRemoteRequest: a stop from the UI of a
// request whose part here ended and that runs on another instance goes
// through the shared store; when the store refuses it as another
// principal's, the UI answers as the API does, 403 not_your_request, and
// says nothing more of the request. Before, it answered 503 "could not be
// stopped", as if the store had failed, with the store's words.
func TestStopFromUIOfAnotherPrincipalsRemoteRequest(t *testing.T) {
	rt := reach.New(nil)
	_, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r1", Principal: "alice"})
	req.End()
	asked := 0
	srv := httptest.NewServer(New(Options{Runtime: rt,
		StopElsewhere: func(r *http.Request, id string, mode reach.StopMode, by, reason string) (bool, error) {
			asked++
			return false, fmt.Errorf("stop of %s (principal alice, tenant acme): %w", id, ErrNotYours)
		}}))
	t.Cleanup(srv.Close)
	resp, err := noRedirect.PostForm(srv.URL+"/ui/stop/r1", url.Values{"mode": {"cancel"}, "reason": {"runaway"}, "csrf": {token(t, srv.URL)}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if asked != 1 {
		t.Fatalf("the store was asked %d times, want once", asked)
	}
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("stop refused by the store as another principal's: %s %q; want 403", resp.Status, body)
	}
	var out struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Error.Code != "not_your_request" {
		t.Fatalf("answer %q: want the API's error not_your_request", body)
	}
	if want := "Request r1 belongs to another principal."; out.Error.Message != want {
		t.Errorf("message %q, want %q", out.Error.Message, want)
	}
	for _, leak := range []string{"alice", "acme", "could not be stopped"} {
		if strings.Contains(string(body), leak) {
			t.Errorf("the refusal says %q: %s", leak, body)
		}
	}
}
