package modelproxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/refusals"
)

// sdkRetries says whether an SDK retries an answer: the openai SDKs obey
// x-should-retry when it is said, else retry 408, 409, 429 and 5xx; the AI
// SDK retries those whatever the headers say.
func sdkRetries(status int, h http.Header) bool {
	return status == 408 || status == 409 || status == 429 || status >= 500 || h.Get("X-Should-Retry") == "true"
}

// TestEveryRefusalOverTheModelProxy walks every refusal code reach's
// source makes (package refusals) and every link.Kind through the model
// proxy's answer: an OpenAI-style error with the code, whose message says
// what to do next, of a status no SDK retries, but for what may pass in a
// moment (a transient refusal, a link error of 429 or 503), which is the
// client's to retry.
func TestEveryRefusalOverTheModelProxy(t *testing.T) {
	codes, err := refusals.Codes("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range codes {
		w := httptest.NewRecorder()
		refuse(w, nil, &reach.Error{Code: c.Code, Type: c.Type, Message: "What happened.", Suggestion: "What to do next."})
		var oe struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(w.Body.Bytes(), &oe)
		if oe.Error.Code != c.Code || !strings.HasPrefix(oe.Error.Message, "What happened. ") {
			t.Errorf("%s (%s): %d %s", c.Code, c.Pos, w.Code, w.Body)
		}
		if sdkRetries(w.Code, w.Header()) != (c.Type == reach.TypeTransient) {
			t.Errorf("%s (%s, type %s): %d, x-should-retry %q: an SDK retries it %v", c.Code, c.Pos, c.Type, w.Code, w.Header().Get("X-Should-Retry"), !(c.Type == reach.TypeTransient))
		}
	}
	p := &Proxy{}
	for _, k := range link.Kinds() {
		w := httptest.NewRecorder()
		p.refuseLink(w, k.New("What happened.", "What to do next."))
		var oe struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(w.Body.Bytes(), &oe)
		if oe.Error.Code != k.Code || oe.Error.Message != "What happened. What to do next." {
			t.Errorf("%s: %d %s", k.Code, w.Code, w.Body)
		}
		if want := k.Status == http.StatusTooManyRequests || k.Status >= 500; sdkRetries(w.Code, w.Header()) != want {
			t.Errorf("%s: %d, x-should-retry %q: an SDK retries it %v", k.Code, w.Code, w.Header().Get("X-Should-Retry"), !want)
		}
	}
}
