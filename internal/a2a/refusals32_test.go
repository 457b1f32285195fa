package a2a

import (
	"errors"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/refusals"
)

// TestEveryRefusalOverA2A walks every refusal code reach's source makes
// (package refusals) and every link.Kind through the A2A front's answer:
// a refused hand-off is a task, rejected, whose status message says what
// happened and what to do next and whose metadata reach/refusal has the
// code and type; a link error that is the client's is a JSON-RPC error
// with the code and status in its details, no task.
func TestEveryRefusalOverA2A(t *testing.T) {
	codes, err := refusals.Codes("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range codes {
		e := &reach.Error{Code: c.Code, Type: c.Type, Message: "What happened.", Suggestion: "What to do next."}
		if got := errText(e); got != "What happened. What to do next." {
			t.Errorf("%s (%s): the task's text %q", c.Code, c.Pos, got)
		}
	}
	for _, k := range link.Kinds() {
		le := k.New("What happened.", "What to do next.")
		if errText(le) != "What happened. What to do next." {
			t.Errorf("%s: the task's text %q", k.Code, errText(le))
		}
		if k.Model {
			continue
		}
		ae := linkError(le)
		want := a2a.ErrInvalidParams
		if k.Status == 429 || k.Status >= 500 {
			want = a2a.ErrServerError
		}
		if !errors.Is(ae.Err, want) || ae.Details["code"] != k.Code || ae.Details["status"] != k.Status || !strings.Contains(ae.Message, "What to do next.") {
			t.Errorf("%s: %+v; want %v with its code and status", k.Code, ae, want)
		}
	}
}
