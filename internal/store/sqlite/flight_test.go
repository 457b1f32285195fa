package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

// TestClaimsInFlight: a call is in flight, as the writer counts it for
// its hold, from a claim that took its key to the key's completion,
// release or settlement, each once; a claim that did not take the key
// (held by another, its context ended, the store closed) leaves no call
// in flight. A count that any of these left high would hold every later
// batch under a crowd that is not there.
func TestClaimsInFlight(t *testing.T) {
	s, err := Open(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	now := time.Now()
	claim := func(ctx context.Context, key, owner string, executing bool) (bool, error) {
		r := &store.IdemRecord{Key: key, Owner: owner, Request: "r", Frame: key, Claimed: now, Expires: now.Add(time.Hour)}
		if executing {
			r.Executing = &store.Frame{Request: "r", Frame: key, Kind: "tool", Name: "pay", State: "executing", Started: now}
		}
		_, claimed, err := s.ClaimKey(ctx, r)
		return claimed, err
	}
	inFlight := func(want int, after string) {
		t.Helper()
		if n := s.W.InFlight(); n != want {
			t.Errorf("after %s: %d calls in flight, want %d", after, n, want)
		}
	}
	for _, executing := range []bool{true, false} {
		if ok, err := claim(ctx, "a", "o", executing); err != nil || !ok {
			t.Fatal(ok, err)
		}
		inFlight(1, "a claim")
		if ok, err := claim(ctx, "a", "p", executing); err != nil || ok {
			t.Fatal(ok, err)
		}
		inFlight(1, "a claim of a held key")
		s.QueueCompleteKey("a", "p", []byte(`{}`), now.Add(time.Hour)) // not p's: nothing happens
		inFlight(1, "another owner's completion")
		s.QueueCompleteKey("a", "o", []byte(`{}`), now.Add(time.Hour))
		s.QueueCompleteKey("a", "o", []byte(`{}`), now.Add(time.Hour))
		inFlight(0, "the completion, twice")
		if err := s.SettleKey(ctx, "a", nil, now); err != nil { // free again
			t.Fatal(err)
		}
		ended, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := claim(ended, "b", "o", executing); err == nil {
			t.Fatal("a claim with an ended context was taken")
		}
		inFlight(0, "a claim whose context had ended")
	}

	// Each end of a claim ends its call.
	for _, end := range []func(key string) error{
		func(key string) error { s.QueueReleaseKey(key, "o"); return nil },
		func(key string) error { return s.ReleaseKey(ctx, key, "o") },
		func(key string) error { return s.CompleteKey(ctx, key, "o", []byte(`{}`), now.Add(time.Hour)) },
		func(key string) error {
			return s.SettleClaim(ctx, &store.IdemRecord{Key: key, Owner: "o", Claimed: now}, nil, time.Time{})
		},
	} {
		if ok, err := claim(ctx, "c", "o", true); err != nil || !ok {
			t.Fatal(ok, err)
		}
		inFlight(1, "a claim")
		if err := end("c"); err != nil {
			t.Fatal(err)
		}
		inFlight(0, "its end")
		if err := s.SettleKey(ctx, "c", nil, now); err != nil {
			t.Fatal(err)
		}
	}

	// Through the runtime's store: a result, a release.
	idem := store.NewIdempotency(s, nil)
	for _, res := range []*reach.Result{{Status: reach.StatusSuccess}, nil} {
		if _, ok, err := idem.Claim(ctx, &reach.IdemClaim{Key: "d"}); err != nil || !ok {
			t.Fatal(ok, err)
		}
		inFlight(1, "Idempotency.Claim")
		idem.Complete("d", res)
		inFlight(0, "Idempotency.Complete")
		if err := s.SettleKey(ctx, "d", nil, now); err != nil {
			t.Fatal(err)
		}
	}

	s.MarkClosed()
	if _, err := claim(ctx, "e", "o", true); err == nil {
		t.Fatal("a closed store took a claim")
	}
	inFlight(0, "a claim of a closed store")
}

// TestClaimDecidedAfterItsContextEnded: a checkpointed claim whose
// context ended while it waited for the writer returns at once, and the
// writer decides it later: what it decided must not be written into the
// results of a ClaimKey that already returned (a data race, under -race).
func TestClaimDecidedAfterItsContextEnded(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	release := hold(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	var claimed bool
	var claimErr error
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		_, claimed, claimErr = s.ClaimKey(ctx, &store.IdemRecord{Key: "k", Owner: "a/1", Request: "r", Frame: "0000000000000001", Claimed: time.Now()})
	}()
	waitQueued(t, s, 1)
	cancel()
	// ClaimKey returns on its context's end; the writer then decides the
	// claim. Nothing orders the two but time, which is what -race needs
	// to see them: a receive from returned would order them.
	time.Sleep(50 * time.Millisecond)
	release()
	if err := s.W.Do(t.Context(), &sqlcore.Write{Run: func(sqlcore.Batch, *sqlcore.Write) {}}); err != nil {
		t.Fatal(err)
	}
	<-returned
	if claimErr == nil || claimed {
		t.Errorf("ClaimKey = %v, %v; want its context's end, not claimed", claimed, claimErr)
	}
}

// TestClaimWithEndedContextNotWritten: a checkpointed claim whose context
// had ended when it was made is refused and never sent, as one with its
// checkpoint is: it held the key, unknown to its caller, until recovery or
// another's wait for its lease (and, decided before its caller looked,
// it could even be answered as taken: TestClaimsInFlight, now and then).
func TestClaimWithEndedContextNotWritten(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	ctx := t.Context()
	now := time.Now()
	ended, cancel := context.WithCancel(ctx)
	cancel()
	for _, r := range []*store.IdemRecord{
		{Key: "k", Owner: "a/1", Request: "r", Frame: "0000000000000001", Claimed: now, Expires: now.Add(time.Hour)},
		{Key: "l", Owner: "a/1", Claimed: now, Expires: now.Add(time.Hour)}, // not checkpointed
	} {
		if _, ok, err := s.ClaimKey(ended, r); err == nil {
			t.Fatalf("a claim of %s with an ended context: %v, no error", r.Key, ok)
		}
		if err := s.W.Do(ctx, &sqlcore.Write{Run: func(sqlcore.Batch, *sqlcore.Write) {}}); err != nil {
			t.Fatal(err)
		}
		if rec, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: r.Key, Owner: "b/1", Claimed: now, Expires: now.Add(time.Hour)}); err != nil || !ok {
			t.Errorf("another's claim of %s = %v, %v (held by %+v); want it taken: the refused claim was written", r.Key, ok, err, rec)
		}
	}
}
