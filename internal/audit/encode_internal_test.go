package audit

import (
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
	"github.com/google/go-cmp/cmp"
)

// encodeEvents are recorded events of every kind encode converts.
func encodeEvents() []*reach.Event {
	at := time.Unix(1_700_000_000, 5)
	return []*reach.Event{
		{Time: at, Request: "r1", Root: "r1", Frame: 0xab, Parent: 0x1234567890abcdef, Kind: reach.ToolFrame, Name: "get",
			Agent: "main", Principal: "alice", CallID: "c1", Args: []byte(`{"id":7}`), State: reach.Completed,
			Summary: "1 hit", Result: []byte(`"call 7"`), Latency: time.Millisecond},
		{Time: at, Request: "r2", Root: "r1", Frame: 0xcd, Kind: reach.ToolFrame, Name: "put", State: reach.Refused,
			Error:     &reach.Error{Guard: "budget", Type: reach.TypeBudget, Code: "budget_calls", Message: "no calls left"},
			Remaining: reach.Budget{ToolCalls: 3}},
		{Time: at, Request: "r3", Root: "r3", State: reach.Cancelled,
			Stop: &reach.Cause{Mode: reach.Cancel, By: "operator", Reason: "runaway"}},
		{Time: at, Request: "r4", Root: "r4", Name: "upstream:kb",
			Breaker: &reach.BreakerChange{Kind: "upstream", Name: "kb", From: reach.BreakerClosed, To: reach.BreakerOpen,
				Reason: "5 transient failures in a row", At: at}},
	}
}

// TestEncode: the writer's conversion of a recorded event is the record
// FromReach and prepare make, and keeps nothing of the event after it.
func TestEncode(t *testing.T) {
	l := &Log{o: Options{MaxMessage: 100, MaxResult: 100, MaxArgs: 100}}
	for _, e := range encodeEvents() {
		want := l.prepare(FromReach(e))
		got := l.encode(e)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("encode(%s) (-want +got):\n%s", e.Request, diff)
		}
		if !cmp.Equal(l.raw.ev, Event{}) {
			t.Errorf("encode(%s) keeps its event: %+v", e.Request, l.raw.ev)
		}
	}
}

// TestEncodeAllocations: a recorded call's event is encoded with the
// record's two allocations (its data and itself) only: FromReach's event,
// frame ids and copy of the result (4 more) are not made.
func TestEncodeAllocations(t *testing.T) {
	l := &Log{o: Options{MaxMessage: 100, MaxResult: 100, MaxArgs: 100}}
	e := encodeEvents()[0]
	var rec *store.AuditRecord
	if n := testing.AllocsPerRun(100, func() { rec = l.encode(e) }); n > 2 {
		t.Errorf("encode: %v allocations, want 2", n)
	}
	if rec == nil {
		t.Fatal("no record")
	}
}
