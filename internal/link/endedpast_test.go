package link

import (
	"errors"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// A completed hand-off's sub-request that this run no longer holds (the
// gateway restarted, or the retention let it go) and that the history
// restores is refused by its id as the one still held is (409
// request_ended, naming its root). Before, restored without its parent, it
// was begun again as a root of its own, outside the root's budget and
// stops, with the budget the call named.
func TestCompletedPastSubRequestRefused(t *testing.T) {
	past := &reach.PastRequest{ID: "sub-1", Parent: "root-1", Principal: LocalPrincipal, State: reach.RequestCompleted,
		Started: time.Now().Add(-time.Minute), Ended: time.Now()}
	rt := reach.New(&reach.Options{History: func(id string) (*reach.PastRequest, bool) {
		if id == past.ID {
			return past, true
		}
		return nil, false
	}})
	q := NewOwned(t.Context(), rt, time.Minute, Budgets{})
	_, r, done, err := q.CallContext(t.Context(), Target{Request: "sub-1"}, nil)
	if err == nil {
		done()
		t.Fatalf("a call naming the completed past hand-off sub-1 ran in %s (parent %v); want 409 request_ended", r.ID(), r.Parent())
	}
	var le *Error
	if !errors.As(err, &le) || le.Status != 409 || le.Code != "request_ended" {
		t.Fatalf("a call naming the completed past hand-off sub-1: %v; want 409 request_ended", err)
	}
	// A past root of its own is begun again, as before.
	past = &reach.PastRequest{ID: "root-2", Principal: LocalPrincipal, State: reach.RequestCompleted, Started: time.Now(), Ended: time.Now()}
	_, r, done, err = q.CallContext(t.Context(), Target{Request: "root-2"}, nil)
	if err != nil {
		t.Fatalf("a call naming the completed past root root-2: %v; want it begun again", err)
	}
	done()
}
