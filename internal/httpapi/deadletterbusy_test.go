package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestDeadLetterBusySaysWhen: a dead letter taken by a retry that a crash
// cut off stays taken until a recovery gives it back (on several
// instances, at the latest ten minutes after the take): the refusal of a
// retry or a dismissal meanwhile says so, and how to watch it, not only
// "try again when that is done", which never comes for an operator
// waiting on a retry that died.
func TestDeadLetterBusySaysWhen(t *testing.T) {
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/v1/deadletters/dl-1/retry", nil)
	r.SetPathValue("id", "dl-1")
	if !deadLetterError(w, r, fmt.Errorf("retry: %w", reach.ErrDeadLetterBusy)) {
		t.Fatal("no error answered")
	}
	if w.Code != http.StatusConflict {
		t.Fatalf("status %d, want 409", w.Code)
	}
	var out struct {
		Error struct{ Code, Message, Suggestion string }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	s := out.Error.Suggestion
	if out.Error.Code != "busy" || !strings.Contains(s, "ten minutes") || !strings.Contains(s, "deadletters list") {
		t.Errorf("busy refusal %+v: want a suggestion that says a crashed retry's dead letter is given back within ten minutes, and how to watch it", out.Error)
	}
}

// TestDeadLettersListState: GET /v1/deadletters?state= takes the states
// there are (and all); another is refused 400 saying which to use. It
// answered an empty list, as if there were none in that state.
func TestDeadLettersListState(t *testing.T) {
	a := &API{rt: reach.New(nil)}
	for state, want := range map[string]int{"": 200, "open": 200, "all": 200, "resolved": 200, "opne": 400} {
		w := httptest.NewRecorder()
		a.listDeadLetters(w, httptest.NewRequest("GET", "/v1/deadletters?state="+state, nil))
		if w.Code != want || (want == 400 && !strings.Contains(w.Body.String(), "Use open, retried, resolved, taken or all")) {
			t.Errorf("state %q: %d %s, want %d", state, w.Code, w.Body, want)
		}
	}
}
