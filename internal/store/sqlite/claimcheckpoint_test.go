package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// executingOf is the row a claim carries as its "executing" checkpoint.
func executingOf(c *reach.Checkpoint) *store.Frame {
	return &store.Frame{Request: c.Request, Frame: c.Frame.String(), Kind: "tool", Name: c.Tool, CallID: c.CallID,
		IdemKey: c.IdempotencyKey, State: c.State.String(), Args: c.Args, Started: c.Started}
}

// A claim that carries its "executing" checkpoint is told what became of
// it, whatever its caller's context does: a claim refused (an error) left
// nothing behind, and a claim taken (its checkpoint durable with it) is
// its caller's to end. A claim whose context ended before it was sent is
// not sent. Before, a context that ended while the claim waited for the
// writer got an error, and the claim and its checkpoint committed anyway:
// a retry of the call, which never ran, was answered "it may have run".
func TestCancelledClaimWithCheckpointLeavesKeyFree(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	idem := store.NewIdempotency(s, &store.IdempotencyOptions{Checkpoint: executingOf})
	claimOf := func(frame reach.FrameID) *reach.IdemClaim {
		return &reach.IdemClaim{Key: "k", Args: "d", Request: "r1", Frame: frame, Lease: time.Minute,
			Checkpoint: &reach.Checkpoint{Request: "r1", Frame: frame, Tool: "pay", CallID: "c1", IdempotencyKey: "k",
				State: reach.Executing, Args: []byte(`{}`), Started: time.Now()}}
	}

	// Ended before it is sent: refused, nothing written.
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	if _, claimed, err := idem.Claim(ended, claimOf(0xf0)); err == nil || claimed {
		t.Fatalf("claim with an ended context = %v, %v; want its error", claimed, err)
	}
	if open, err := s.OpenFrames(t.Context()); err != nil || len(open) != 0 {
		t.Fatalf("open frames after a claim that was not sent = %d, %v; want none", len(open), err)
	}

	// Ended while it waits for the writer: its outcome is known.
	release := hold(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	type outcome struct {
		claimed bool
		err     error
	}
	done := make(chan outcome, 1)
	c := claimOf(0xf1)
	go func() { _, ok, err := idem.Claim(ctx, c); done <- outcome{ok, err} }()
	waitQueued(t, s, 1)
	cancel()
	release()
	got := <-done
	open, err := s.OpenFrames(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case got.err != nil && len(open) != 0:
		t.Errorf("a claim answered %v left %d open checkpoints; want none", got.err, len(open))
	case got.err == nil && (!got.claimed || !c.Checkpointed || len(open) != 1):
		t.Errorf("claim = %v, checkpointed %v, %d open checkpoints; want it taken with its checkpoint", got.claimed, c.Checkpointed, len(open))
	}
	if got.err == nil {
		idem.Complete("k", nil) // its caller ends it: the call did not run
	}
	// Nothing ran under the key: a retry runs the call.
	res, claimed, err := idem.Claim(t.Context(), claimOf(0xf2))
	if err != nil {
		t.Fatal(err)
	}
	if !claimed {
		t.Errorf("the retry of a call that never ran was answered %s %+v instead of running it", res.Status, res.Error)
	}
}

// A claim that is not taken must not write its "executing" checkpoint
// (IdemRecord.Executing: "not at all when it is not"), even when a second
// claim of the same owner and instant (one process's life, two calls of
// one key) finds the first call's claim: a checkpoint written beside it
// would be a frame that says a call ran that never did (recovery answers
// it "may have run").
func TestUntakenClaimWritesNoCheckpoint(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	ctx := t.Context()
	now := time.Now()
	exec := func(request, frame string) *store.Frame {
		return &store.Frame{Request: request, Frame: frame, Kind: "tool", Name: "pay", State: "executing", Started: now}
	}
	if _, claimed, err := s.ClaimKey(ctx, &store.IdemRecord{Key: "k", Owner: "life", Request: "r1", Frame: "f1", Claimed: now,
		Expires: now.Add(time.Hour), Executing: exec("r1", "f1")}); err != nil || !claimed {
		t.Fatalf("first claim = %v, %v; want claimed", claimed, err)
	}
	held, claimed, err := s.ClaimKey(ctx, &store.IdemRecord{Key: "k", Owner: "life", Request: "r2", Frame: "f2", Claimed: now,
		Expires: now.Add(time.Hour), Executing: exec("r2", "f2")})
	if err != nil || claimed || held == nil {
		t.Fatalf("second claim = %+v, %v, %v; want the first's record", held, claimed, err)
	}
	if fs, err := s.RequestFrames(ctx, "r2"); err != nil || len(fs) != 0 {
		t.Errorf("frames of r2 = %d, %v; want none: its claim was not taken", len(fs), err)
	}
}
