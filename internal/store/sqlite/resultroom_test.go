package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/google/go-cmp/cmp"
)

// resultRoom returns the room the next claim keeps (store_meta).
func resultRoom(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow(`SELECT value FROM store_meta WHERE key = 'result_room'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// recordRoom returns the length of the room of key's record, -1 for none
// (NULL).
func recordRoom(t *testing.T, s *Store, key string) int {
	t.Helper()
	var n *int
	if err := s.r.QueryRow(`SELECT length(room) FROM idempotency WHERE key = ?`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == nil {
		return -1
	}
	return *n
}

// TestClaimKeepsRoomForItsResult (migration 17): a claim keeps room as
// long as the results recorded lately (their ninth decile; none if that
// is over resultRoomMax), sized when the writer moves its marks; its completion
// records the result whole and gives the room back; a key claimed again
// after its result expired keeps room again.
func TestClaimKeepsRoomForItsResult(t *testing.T) {
	ctx := context.Background()
	s := openSQLite(t, t.TempDir(), nil)
	now := time.Now()
	n := 0
	call := func(result []byte) string {
		t.Helper()
		n++
		key := fmt.Sprintf("alice\x00\x00pay:r1/c%d", n)
		if _, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: key, Owner: "reach/0", Args: "d1", Request: "r1",
			Claimed: now, Expires: now.Add(time.Hour)}); err != nil || !ok {
			t.Fatalf("ClaimKey(%q) = %v, %v", key, ok, err)
		}
		if result != nil {
			if err := s.CompleteKey(ctx, key, "reach/0", result, now.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		return key
	}
	settle := func() {
		t.Helper()
		if err := s.W.Do(ctx, s.settleMarks()); err != nil {
			t.Fatal(err)
		}
	}
	if got := resultRoom(t, s); got != 0 {
		t.Fatalf("a new store's claims keep %d bytes of room, want 0 (no result recorded)", got)
	}
	// 9 results are too few to size the room by.
	for range 9 {
		call(bytes.Repeat([]byte("a"), 200))
	}
	settle()
	if got := resultRoom(t, s); got != 0 {
		t.Errorf("after 9 results the room is %d, want 0 (as it was)", got)
	}
	// 10 of 200 and 15 of 50: the ninth decile of the 25 is the 3rd
	// longest, 200 (it was sized from the 26th longest: none yet).
	call(bytes.Repeat([]byte("a"), 200))
	for range 15 {
		call(bytes.Repeat([]byte("z"), 50))
	}
	settle()
	if got := resultRoom(t, s); got != 200 {
		t.Errorf("after 25 results the room is %d, want 200", got)
	}
	// Then 100 results of 100 bytes and 20 of 300: of the last 256
	// results (all 145), the 15th longest is one of 300 (the 26th, which
	// it was sized from, one of 200: a result in seven did not fit).
	for range 100 {
		call(bytes.Repeat([]byte("b"), 100))
	}
	for range 20 {
		call(bytes.Repeat([]byte("c"), 300))
	}
	settle()
	if got := resultRoom(t, s); got != 300 {
		t.Errorf("the room is %d, want 300", got)
	}
	claimed := call(nil)
	if got := recordRoom(t, s, claimed); got != 300 {
		t.Errorf("a claim keeps %d bytes of room, want 300", got)
	}
	result := []byte(`{"status":"success","data":"R-1"}`)
	if err := s.CompleteKey(ctx, claimed, "reach/0", result, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := recordRoom(t, s, claimed); got != -1 {
		t.Errorf("a completed record keeps %d bytes of room, want none", got)
	}
	rec, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: claimed, Owner: "reach/1", Args: "d1", Request: "r2",
		Claimed: now, Expires: now.Add(time.Hour)})
	if err != nil || ok || rec.State != store.IdemDone || !bytes.Equal(rec.Result, result) {
		t.Fatalf("ClaimKey(%q) again = %+v, %v, %v; want its result", claimed, rec, ok, err)
	}
	// Once its result expired, a new claim takes the record, with room.
	later := now.Add(2 * time.Hour)
	if _, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: claimed, Owner: "reach/1", Args: "d1", Request: "r2",
		Claimed: later, Expires: later.Add(time.Hour)}); err != nil || !ok {
		t.Fatalf("claiming an expired key again = %v, %v", ok, err)
	}
	if got := recordRoom(t, s, claimed); got != 300 {
		t.Errorf("a key claimed again keeps %d bytes of room, want 300", got)
	}
	// Results a little longer than resultRoomMax: the room stops there.
	for range 30 {
		call(bytes.Repeat([]byte("d"), resultRoomMax))
	}
	settle()
	if got := resultRoom(t, s); got != resultRoomMax {
		t.Errorf("after results of %d bytes the room is %d, want %d", resultRoomMax, got, resultRoomMax)
	}
	// Longer: most would not fit in any room kept, so none is.
	for range 30 {
		call(bytes.Repeat([]byte("e"), resultRoomMax+1))
	}
	settle()
	if got := resultRoom(t, s); got != 0 {
		t.Errorf("after results of %d bytes the room is %d, want 0", resultRoomMax+1, got)
	}
	if got := recordRoom(t, s, call(nil)); got != 0 {
		t.Errorf("a claim keeps %d bytes of room, want 0", got)
	}
}

// TestSQLiteMigratesToResultRoom: a store of schema 16 holding what a crash
// leaves (a call claimed and executing, a claim whose checkpoint never
// came, a call completed whose result was not recorded) and a recorded
// result is migrated when this binary opens it (migration 17): every
// record and frame reads as it was written, recovery settles each claim
// by its checkpoint, the recorded result still answers its key, and a new
// claim keeps room while an old record has none.
func TestSQLiteMigratesToResultRoom(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := oldDatabase(t, dir, 16)
	t0, dead, recorded := writeCrashLeft(t, w)
	w.Close()

	s := openSQLite(t, dir, nil)
	if v, err := s.SchemaVersion(ctx); err != nil || v < 17 {
		t.Fatalf("SchemaVersion = %d, %v; want 17 or later", v, err)
	}
	var recs []string
	rows, err := s.r.Query(`SELECT key, owner, state, args, request, frame, ifnull(result, ''), claimed, length(room) IS NULL FROM idempotency ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key, owner, state, args, req, fr, result string
		var claimed int64
		var noRoom bool
		if err := rows.Scan(&key, &owner, &state, &args, &req, &fr, &result, &claimed, &noRoom); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, fmt.Sprintf("%s %s %s %s %s/%s %q %v %v", key, owner, state, args, req, fr, result, claimed == t0, noRoom))
	}
	rows.Close()
	want := []string{
		"k-01 " + dead + " claimed d-k-01 r1/01 \"\" true true",
		"k-02 " + dead + " claimed d-k-02 r1/02 \"\" true true",
		"k-03 " + dead + " claimed d-k-03 r1/03 \"\" true true",
		"k-04 " + dead + " done d-k-04 r1/04 " + fmt.Sprintf("%q", recorded) + " true true",
	}
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Errorf("the records after the migration (-want +got):\n%s", diff)
	}
	frames, err := s.RequestFrames(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	var fs []string
	for _, f := range frames {
		fs = append(fs, f.Frame+" "+f.State+" "+f.IdemKey+" "+string(f.Args))
	}
	if diff := cmp.Diff([]string{`01 executing k-01 {"amount":1}`, `03 completed k-03 {"amount":1}`, `04 completed k-04 {"amount":1}`}, fs); diff != "" {
		t.Errorf("the frames after the migration (-want +got):\n%s", diff)
	}
	open, err := s.OpenFrames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0].Frame != "01" {
		t.Errorf("OpenFrames after the migration = %d frames, want frame 01", len(open))
	}

	idem := store.NewIdempotency(s, nil)
	settled, err := idem.Recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, st := range settled {
		outcomes = append(outcomes, st.Claim.Key+" "+st.Outcome)
	}
	if diff := cmp.Diff([]string{"k-01 " + store.SettledInterrupted, "k-02 " + store.SettledReleased, "k-03 " + store.SettledResultLost}, outcomes); diff != "" {
		t.Errorf("recovery settled (-want +got):\n%s", diff)
	}
	now := time.Now()
	rec, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: "k-04", Owner: idem.Owner(), Args: "d-k-04", Request: "r2",
		Claimed: now, Expires: now.Add(time.Hour)})
	if err != nil || ok || !bytes.Equal(rec.Result, recorded) {
		t.Errorf("ClaimKey(k-04) = %+v, %v, %v; want its recorded result", rec, ok, err)
	}
	// A new claim keeps the room of a new store (no results to size it
	// by yet: none), and completes.
	if _, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: "k-05", Owner: idem.Owner(), Args: "d-k-05", Request: "r2",
		Claimed: now, Expires: now.Add(time.Hour)}); err != nil || !ok {
		t.Fatalf("ClaimKey(k-05) = %v, %v", ok, err)
	}
	if got := recordRoom(t, s, "k-05"); got != resultRoom(t, s) {
		t.Errorf("a new claim keeps %d bytes of room, want %d", got, resultRoom(t, s))
	}
	if err := s.CompleteKey(ctx, "k-05", idem.Owner(), recorded, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

// TestSettledClaimGivesRoomBack: a claim a recovery settles with a result
// (SettleClaim) or that an operator settles by its key (SettleKey) gives
// its room back, as a completion does: the settled record kept the room's
// zeroes (up to resultRoomMax bytes a record) until its result expired.
func TestSettledClaimGivesRoomBack(t *testing.T) {
	ctx := context.Background()
	s := openSQLite(t, t.TempDir(), nil)
	now := time.Now()
	for i := range 30 { // results of 200 bytes size the room
		key := fmt.Sprintf("alice\x00\x00pay:r0/c%d", i)
		if _, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: key, Owner: "reach/0", Args: "d1", Request: "r0",
			Claimed: now, Expires: now.Add(time.Hour)}); err != nil || !ok {
			t.Fatalf("ClaimKey(%q) = %v, %v", key, ok, err)
		}
		if err := s.CompleteKey(ctx, key, "reach/0", bytes.Repeat([]byte("a"), 200), now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.W.Do(ctx, s.settleMarks()); err != nil {
		t.Fatal(err)
	}
	claim := func(key string) *store.IdemRecord {
		t.Helper()
		r := &store.IdemRecord{Key: key, Owner: "reach/0", Args: "d1", Request: "r1", Claimed: now, Expires: now.Add(time.Hour)}
		if _, ok, err := s.ClaimKey(ctx, r); err != nil || !ok {
			t.Fatalf("ClaimKey(%q) = %v, %v", key, ok, err)
		}
		if got := recordRoom(t, s, key); got != 200 {
			t.Fatalf("the claim of %q keeps %d bytes of room, want 200", key, got)
		}
		return r
	}
	a := claim("alice\x00\x00pay:r1/c1")
	if err := s.SettleClaim(ctx, a, []byte(`{"status":"interrupted"}`), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := recordRoom(t, s, a.Key); got != -1 {
		t.Errorf("a claim settled by a recovery keeps %d bytes of room, want none", got)
	}
	b := claim("alice\x00\x00pay:r1/c2")
	if err := s.SettleKey(ctx, b.Key, []byte(`{"status":"success"}`), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := recordRoom(t, s, b.Key); got != -1 {
		t.Errorf("a claim settled by its key keeps %d bytes of room, want none", got)
	}
}
