package records

import (
	"encoding/json"
	"testing"

	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/frames"
)

// TestSettle: a refusal becomes a refused result, a cancel a cancelled
// one; a result's status gives its frame's state.
func TestSettle(t *testing.T) {
	stop := &fault.StopError{Cause: fault.Cause{Mode: fault.Cancel}}
	for _, c := range []struct {
		res    *Result
		err    error
		status Status
		state  frames.State
	}{
		{nil, &fault.Error{Code: "denied"}, StatusRefused, frames.Refused},
		{nil, stop, StatusCancelled, frames.Cancelled},
		{&Result{Status: StatusSuccess}, nil, StatusSuccess, frames.Completed},
		{&Result{Status: StatusPending}, nil, StatusPending, frames.AwaitingApproval},
		{&Result{Status: StatusCancelled}, nil, StatusCancelled, frames.Cancelled},
		{&Result{Status: StatusError}, nil, StatusError, frames.Failed},
	} {
		res, st := Settle(c.res, c.err)
		if res.Status != c.status || st != c.state || (c.err != nil && res.Error == nil) {
			t.Errorf("Settle(%v, %v) = %s, %s; want %s, %s", c.res, c.err, res.Status, st, c.status, c.state)
		}
	}
}

// TestCheckpointEnded: the end of a checkpoint keeps what it began with
// and says how the call ended; the first is left as it was.
func TestCheckpointEnded(t *testing.T) {
	begun := Checkpoint{Tool: "pay", State: frames.Executing}
	ok := begun.Ended(&Result{Status: StatusSuccess, Data: json.RawMessage(`{}`)}, nil)
	if ok.State != frames.Completed || len(ok.ResultDigest) != 64 || ok.Tool != "pay" || begun.State != frames.Executing {
		t.Fatalf("a success: %+v (begun: %s)", ok, begun.State)
	}
	if f := begun.Ended(&Result{Status: StatusError, Error: &fault.Error{Code: "x"}}, nil); f.State != frames.Failed || f.Error.Code != "x" {
		t.Fatalf("a failure: %+v", f)
	}
	if r := begun.Ended(nil, &fault.Error{Code: "denied"}); r.State != frames.Refused {
		t.Fatalf("a refusal: %s", r.State)
	}
	if c := begun.Ended(nil, &fault.StopError{}); c.State != frames.Cancelled {
		t.Fatalf("a stop: %s", c.State)
	}
}

// TestReplay: a replayed result says so, and the record keeps its notes.
func TestReplay(t *testing.T) {
	rec := &Result{Status: StatusSuccess, Notes: make([]string, 1, 4)}
	out := rec.Replay()
	if !out.Replayed || rec.Replayed || len(out.Notes) != 2 || len(rec.Notes) != 1 {
		t.Fatalf("Replay = %+v, record now %+v", out, rec)
	}
	out.Notes[0] = "changed"
	out.Notes = append(out.Notes, "more")
	if rec.Notes[0] == "changed" || cap(rec.Notes) != 4 || rec.Notes[:2][1] == "more" {
		t.Fatal("the replay shares its notes with the record")
	}
}
