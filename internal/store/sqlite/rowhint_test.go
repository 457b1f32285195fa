package sqlite

import (
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// A write call's claim and its "executing" checkpoint keep the rows they
// were inserted at, and the key's completion and the checkpoint's end
// find them there (sqlcore's Core.rows): each is kept until then.
func TestWriteCallEndsByItsRows(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	now := time.Now()
	f := &store.Frame{Request: "req_1", Frame: "00000001", Kind: "tool", Name: "pay", State: "executing", Started: now}
	if _, ok, err := s.ClaimKey(t.Context(), &store.IdemRecord{Key: "k", Owner: "o", Request: "req_1", Frame: "00000001",
		Claimed: now, Expires: now.Add(time.Hour), Executing: f}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if c, fr := s.KeptRows(); c != 1 || fr != 1 {
		t.Fatalf("rows kept after a claim with its checkpoint: %d claims, %d frames; want 1 and 1", c, fr)
	}
	end := *f
	end.State = "completed"
	s.QueueFrame(&end)
	s.QueueCompleteKey("k", "o", []byte(`"r"`), now.Add(time.Hour))
	if err := flush(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if c, fr := s.KeptRows(); c != 0 || fr != 0 {
		t.Errorf("rows kept after the call's end: %d claims, %d frames; want none", c, fr)
	}
	if state, result := keyRecord(t, s, "k"); state != "done" || result != `"r"` {
		t.Fatalf("the key after its completion: %s, %s", state, result)
	}
	open, err := s.OpenFrames(t.Context())
	if err != nil || len(open) != 0 {
		t.Errorf("open frames after the end: %v, %v; want none", open, err)
	}
}

// A row kept for a key whose record moved is only a hint: a key claimed
// again after its result expired moves its record to a new row (above
// the claims' mark), while SQLite's last inserted rowid, which the claim
// keeps, is another record's. Its completion finds its own record by the
// key, and leaves the other one as it was.
func TestCompleteFindsAMovedRecord(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	claim := func(key string, at time.Time) {
		t.Helper()
		if _, ok, err := s.ClaimKey(t.Context(), &store.IdemRecord{Key: key, Owner: "o", Claimed: at, Expires: at.Add(time.Hour)}); err != nil || !ok {
			t.Fatal(key, ok, err)
		}
	}
	now := time.Now()
	claim("k", now)
	if err := s.CompleteKey(t.Context(), "k", "o", []byte(`1`), now.Add(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	claim("other", now) // the last row inserted
	claim("k", now.Add(time.Second))
	if err := s.CompleteKey(t.Context(), "k", "o", []byte(`2`), now.Add(time.Hour)); err != nil {
		t.Fatalf("completing a key claimed again after its result expired: %v", err)
	}
	if state, result := keyRecord(t, s, "k"); state != "done" || result != `2` {
		t.Errorf("k after its second completion: %s, %s; want done with 2", state, result)
	}
	if state, result := keyRecord(t, s, "other"); state != "claimed" || result != "" {
		t.Errorf("the other key after k's completion: %s, %s; want still claimed, no result", state, result)
	}
}

// A checkpoint put open again moves to a new row (frames.go): its end,
// whose kept row is the old one, finds it by its request and frame.
func TestFrameEndFindsAMovedCheckpoint(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	now := time.Now()
	f := &store.Frame{Request: "req_1", Frame: "00000001", Kind: "tool", Name: "pay", State: "executing", Started: now}
	if _, ok, err := s.ClaimKey(t.Context(), &store.IdemRecord{Key: "k", Owner: "o", Request: "req_1", Frame: "00000001",
		Claimed: now, Expires: now.Add(time.Hour), Executing: f}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	again := *f
	again.State = "waiting"
	if err := s.PutFrame(t.Context(), &again); err != nil {
		t.Fatal(err)
	}
	end := *f
	end.State = "completed"
	if err := s.PutFrame(t.Context(), &end); err != nil {
		t.Fatal(err)
	}
	fs, err := s.RequestFrames(t.Context(), "req_1")
	if err != nil || len(fs) != 1 || fs[0].State != "completed" {
		t.Fatalf("the request's frames after the end: %v, %v; want the one, completed", fs, err)
	}
	if open, err := s.OpenFrames(t.Context()); err != nil || len(open) != 0 {
		t.Errorf("open frames after the end: %v, %v; want none", open, err)
	}
}

// keyRecord returns the state and result of key's record.
func keyRecord(t *testing.T, s *Store, key string) (state, result string) {
	t.Helper()
	var r []byte
	if err := s.r.QueryRow(`SELECT state, result FROM idempotency WHERE key = ?`, key).Scan(&state, &r); err != nil {
		t.Fatal(key, err)
	}
	return state, string(r)
}
