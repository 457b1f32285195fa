package ui

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// opsOnlyDeadLetters lists one dead letter to an operator, and refuses
// anyone else as the API does.
type opsOnlyDeadLetters struct{}

func isOps(r *http.Request) bool { return r.Header.Get("X-Test-Role") == "operator" }

func (opsOnlyDeadLetters) List(r *http.Request, state string) ([]DeadLetter, error) {
	if !isOps(r) {
		return nil, errors.New("Dead letters are for operators.")
	}
	return []DeadLetter{{ID: "dl-1", Request: "trip", Tool: "release", Args: `{"order":"o-1"}`, Error: "the upstream said no", State: "open", Attempts: 3, Updated: time.Now()}}, nil
}
func (opsOnlyDeadLetters) Retry(*http.Request, string) error           { return nil }
func (opsOnlyDeadLetters) Dismiss(*http.Request, string, string) error { return nil }

// The navigation links the dead letters page for an operator only; one
// who is not, who goes there by its address, is told it is for operators,
// in the page. Before, the UI had no dead letters page.
func TestDeadLettersPageForOperators(t *testing.T) {
	srv := httptest.NewServer(New(Options{Runtime: reach.New(nil), DeadLetters: opsOnlyDeadLetters{}, Operator: isOps}))
	t.Cleanup(srv.Close)
	page := func(role, path string) string {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("X-Test-Role", role)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s as %q: %s", path, role, resp.Status)
		}
		return string(b)
	}
	if p := page("operator", "/ui/"); !strings.Contains(p, `href="/ui/deadletters"`) {
		t.Errorf("an operator's navigation has no link to the dead letters")
	}
	if p := page("operator", "/ui/deadletters"); !strings.Contains(p, `data-deadletter="dl-1"`) || !strings.Contains(p, `action="/ui/deadletters/dl-1/retry"`) {
		t.Errorf("an operator's dead letters page lacks the open one or its retry")
	}
	if p := page("", "/ui/"); strings.Contains(p, `href="/ui/deadletters"`) {
		t.Errorf("the navigation of one who is not an operator links the dead letters page")
	}
	if p := page("", "/ui/deadletters"); !strings.Contains(p, `id="deadletters-error"`) || !strings.Contains(p, "for operators") || strings.Contains(p, "dl-1") {
		t.Errorf("the dead letters page of one who is not an operator: %s", p)
	}
}
