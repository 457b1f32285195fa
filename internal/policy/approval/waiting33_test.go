package approval

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/ids"
)

// TestWaitsForReadsThePendingAnswer: the id of the approval a frame waited
// for is read back from the pending answer its event keeps, however the
// answer names the way back (the request, or the idempotency key), and
// from nothing else: another code, another type, or a message that only
// quotes an id.
func TestWaitsForReadsThePendingAnswer(t *testing.T) {
	a := &Approval{ID: ids.Text("apr_"), Tool: "refund", Principal: "alice", Requires: UserAndReviewer,
		RootRequest: "r1", Expires: time.Now().Add(time.Minute)}
	for _, keyed := range []bool{false, true} {
		e := pendingError(a, keyed)
		if got := WaitsFor(e); got != a.ID {
			t.Errorf("WaitsFor(pendingError keyed=%v) = %q, want %q", keyed, got, a.ID)
		}
		stored := &reach.Error{Guard: "authorize", Type: e.Type, Code: e.Code, Message: e.Message} // as an audit event keeps it
		if got := WaitsFor(stored); got != a.ID {
			t.Errorf("WaitsFor of the stored answer = %q, want %q", got, a.ID)
		}
	}
	for _, e := range []*reach.Error{
		nil,
		{Type: reach.TypeApproval, Code: "approval_denied", Message: pendingError(a, false).Message},
		{Type: "tool", Code: "approval_pending", Message: pendingError(a, false).Message},
		{Type: reach.TypeApproval, Code: "approval_pending", Message: "the tool said: approval " + a.ID + " is fine"},
	} {
		if got := WaitsFor(e); got != "" {
			t.Errorf("WaitsFor(%+v) = %q, want none", e, got)
		}
	}
}

// TestFrameRootsFollowFrames: each waiting frame keeps its root request,
// also once added to an approval stored before they were kept (its
// frames are its request's).
func TestFrameRootsFollowFrames(t *testing.T) {
	a := &Approval{Request: "sub", Frames: []string{"f1", "f2"}} // stored before FrameRoots
	a.addFrame("f3", "r2")
	if !slices.Equal(a.FrameRoots, []string{"sub", "sub", "r2"}) {
		t.Fatalf("FrameRoots %v", a.FrameRoots)
	}
	for i, want := range []string{"sub", "sub", "r2"} {
		if got := a.FrameRoot(i); got != want {
			t.Errorf("FrameRoot(%d) = %q, want %q", i, got, want)
		}
	}
	old := &Approval{Request: "sub", Frames: []string{"f1"}}
	if got := old.FrameRoot(0); got != "sub" {
		t.Errorf("FrameRoot of an approval stored before FrameRoots = %q, want its request", got)
	}
}

// TestSettledDenialSaysWhoAndWhy: a frame settled by a denial says who
// denied it and why, from the approval's denial (as a store keeps it),
// the same with or without the event's actor.
func TestSettledDenialSaysWhoAndWhy(t *testing.T) {
	a := &Approval{ID: "apr_1", Denial: &Vote{By: "bob", As: "reviewer", Reason: "not this order."}}
	for _, by := range []string{"bob", ""} {
		s, e, _, ok := Settled(a, "denied", by)
		if !ok || s != reach.Refused || e == nil || e.Message != "The approval apr_1 of this call was denied by bob: not this order." {
			t.Errorf("Settled(denied, by %q) = %v %+v %v", by, s, e, ok)
		}
	}
	_, e, _, _ := Settled(&Approval{ID: "apr_2"}, "denied", "")
	if e == nil || !strings.HasSuffix(e.Message, "was denied.") {
		t.Errorf("a denial of no record: %+v", e)
	}
}

// FuzzWaitsFor: any error text reads back no id or one it holds.
func FuzzWaitsFor(f *testing.F) {
	f.Add(pendingError(&Approval{ID: "apr_01a25004f02960b1f6a1749ef5630701", Tool: "t"}, false).Message)
	f.Add("needs approval before it runs: approval apr_ waits")
	f.Fuzz(func(t *testing.T, msg string) {
		got := WaitsFor(&reach.Error{Type: reach.TypeApproval, Code: "approval_pending", Message: msg})
		if got != "" && (!strings.Contains(msg, got) || len(got) != len("apr_")+32) {
			t.Fatalf("WaitsFor(%q) = %q", msg, got)
		}
	})
}
