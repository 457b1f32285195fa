package ui

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/telemetry"
)

// storeDownApprovals decides nothing: the store did not take the
// decision.
type storeDownApprovals struct{ fakeApprovals }

func (f *storeDownApprovals) Deny(_ *http.Request, id, _ string) error {
	return fmt.Errorf("%w: the store did not take the decision on %s", ErrNotRecorded, id)
}

// TestAppr38DecisionNotRecordedBanner: a decision the store did not take
// is told as such (look again, decide again), not as one decided already
// or not the viewer's to decide, which sent the human away from an
// approval still waiting for them.
func TestAppr38DecisionNotRecordedBanner(t *testing.T) {
	stats := telemetry.NewStats(0)
	rt := reach.New(&reach.Options{Recorder: stats})
	ap := &storeDownApprovals{fakeApprovals{items: []Approval{{ID: "ap1", Tool: "refund_order", Args: `{}`, Status: "pending", Request: "r1", AskedBy: "alice", Needs: "alice"}}}}
	srv := httptest.NewServer(New(Options{Runtime: rt, Stats: stats, Approvals: ap}))
	t.Cleanup(srv.Close)
	resp := post(t, srv.URL, "/ui/approvals/ap1/deny", url.Values{"reason": {"no"}})
	loc := resp.Header.Get("Location")
	if loc != "/ui/approvals?flash=not_recorded&id=ap1" {
		t.Fatalf("after a denial the store did not take, redirected to %q; want flash=not_recorded", loc)
	}
	if page := get(t, srv.URL+loc); !strings.Contains(page, "did not take it in time") || strings.Contains(page, "decided or expired already") {
		t.Error("the banner does not say the store did not take the decision, or says it was decided already")
	}
}
