package sqlite

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentreach/reach/internal/store"
)

// openFrameIDs returns the ids of the frames OpenFrames lists.
func openFrameIDs(t *testing.T, s *Store) []string {
	t.Helper()
	open, err := s.OpenFrames(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range open {
		ids = append(ids, f.Frame+" "+f.State)
	}
	slices.Sort(ids)
	return ids
}

// held returns the rowids frames_held lists.
func held(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM frames_held`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// settle moves the mark of the settled frames, as the writer does now and
// then.
func settle(t *testing.T, s *Store) {
	t.Helper()
	if err := s.W.Do(context.Background(), s.settleMarks()); err != nil {
		t.Fatal(err)
	}
}

// TestSQLiteOpenFramesAcrossTheMark: the open frames are found whether
// they were written before the mark moved (held) or after it, a frame
// written final then open again is found wherever the mark is, and a held
// frame is let go once final.
func TestSQLiteOpenFramesAcrossTheMark(t *testing.T) {
	ctx := t.Context()
	s := openSQLite(t, t.TempDir(), nil)
	t0 := time.Now()
	put := func(id, state string) {
		t.Helper()
		if err := s.PutFrame(ctx, &store.Frame{Request: "r1", Frame: id, Kind: "tool", Name: "pay", State: state, Started: t0}); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "executing")
	put("b", "completed")
	put("d", "failed")
	put("e", "waiting")
	put("f", "completed") // the last frame
	settle(t, s)          // a and e are held, b, d and f are below the mark
	put("f", "waiting")   // the last frame, below the mark, open again
	put("c", "executing")
	put("d", "executing") // final, then open again
	put("e", "completed")
	want := []string{"a executing", "c executing", "d executing", "f waiting"}
	if diff := cmp.Diff(want, openFrameIDs(t, s)); diff != "" {
		t.Errorf("OpenFrames (-want +got):\n%s", diff)
	}
	settle(t, s)
	if diff := cmp.Diff(want, openFrameIDs(t, s)); diff != "" {
		t.Errorf("OpenFrames after the mark moved again (-want +got):\n%s", diff)
	}
	for _, id := range []string{"a", "c", "d", "f"} {
		put(id, "cancelled")
	}
	if got := openFrameIDs(t, s); len(got) != 0 {
		t.Errorf("OpenFrames after they ended = %q, want none", got)
	}
	settle(t, s)
	if n := held(t, s); n != 0 {
		t.Errorf("frames_held keeps %d frames after they ended, want none", n)
	}

	// The open frames are read by their rowid: from the mark and the held
	// ones, not by a scan of every frame.
	noScan(t, s, dialect.FrameSelect+` WHERE `+openFrames, "frames")
}

// noScan fails t if SQLite plans query q with a scan of every row of
// table.
func noScan(t *testing.T, s *Store, q, table string) {
	t.Helper()
	plan := strings.Split(queryPlan(t, s.r, q), "; ")
	for _, p := range plan {
		if p == "SCAN "+table || strings.HasPrefix(p, "SCAN "+table+" ") {
			t.Errorf("%s plans %q, want every step on %s a search", q, plan, table)
		}
	}
}

// TestSQLiteOpenFramesAfterACrash: the frames a run wrote after it last
// moved the mark, and those it held, are found by the next Open, which
// holds the ones still open; a store of schema 6 (an index of open frames)
// is migrated with its open frames found.
func TestSQLiteOpenFramesAfterACrash(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	w := oldDatabase(t, dir, 6)
	t0 := time.Now().UnixNano()
	for _, f := range []struct{ id, state string }{{"01", "completed"}, {"02", "executing"}, {"03", "failed"}, {"04", "waiting"}} {
		if _, err := w.Exec(`INSERT INTO frames (request, frame, kind, name, state, started, updated) VALUES ('r1', ?, 'tool', 'pay', ?, ?, ?)`,
			f.id, f.state, t0, t0); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()

	s, err := Open(ctx, dir, nil) // closed only at the end: it crashes
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := []string{"02 executing", "04 waiting"}
	if diff := cmp.Diff(want, openFrameIDs(t, s)); diff != "" {
		t.Errorf("OpenFrames after the migration (-want +got):\n%s", diff)
	}
	if n := held(t, s); n != 2 {
		t.Errorf("Open held %d frames, want the 2 open ones", n)
	}
	// This run writes more, moves the mark, writes more, and crashes
	// (the store is not closed: the next one opens beside it).
	put := func(id, state string) {
		t.Helper()
		if err := s.PutFrame(ctx, &store.Frame{Request: "r2", Frame: id, Kind: "tool", Name: "pay", State: state, Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	put("05", "executing")
	put("06", "completed")
	settle(t, s)
	put("07", "executing")

	s = openSQLite(t, dir, nil)
	want = []string{"02 executing", "04 waiting", "05 executing", "07 executing"}
	if diff := cmp.Diff(want, openFrameIDs(t, s)); diff != "" {
		t.Errorf("OpenFrames after a crash (-want +got):\n%s", diff)
	}
}

// TestSQLiteClaimsAcrossTheMark: the claims are found whether they were
// made before the mark moved (held) or after it, a claim that takes the
// key of an expired result below the mark is found, and a held claim is
// let go once completed.
func TestSQLiteClaimsAcrossTheMark(t *testing.T) {
	ctx := t.Context()
	s := openSQLite(t, t.TempDir(), nil)
	now := time.Now()
	claim := func(key string) {
		t.Helper()
		if _, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: key, Owner: "reach/1", Claimed: now, Expires: now.Add(time.Hour)}); err != nil || !ok {
			t.Fatalf("ClaimKey(%s) = %v, %v", key, ok, err)
		}
	}
	complete := func(key string, expires time.Time) {
		t.Helper()
		if err := s.CompleteKey(ctx, key, "reach/1", []byte(`{}`), expires); err != nil {
			t.Fatal(err)
		}
	}
	claimed := func() []string {
		t.Helper()
		recs, err := s.ClaimedKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, r := range recs {
			keys = append(keys, r.Key)
		}
		return keys
	}
	claim("a")
	claim("b")
	claim("c")
	complete("b", now.Add(time.Hour))
	complete("c", now.Add(-time.Second)) // expired
	settle(t, s)                         // a is held, b and c are below the mark
	claim("c")                           // takes the expired result's key
	claim("d")
	want := []string{"a", "c", "d"}
	if diff := cmp.Diff(want, claimed()); diff != "" {
		t.Errorf("ClaimedKeys (-want +got):\n%s", diff)
	}
	settle(t, s)
	if diff := cmp.Diff(want, claimed()); diff != "" {
		t.Errorf("ClaimedKeys after the mark moved again (-want +got):\n%s", diff)
	}
	for _, k := range want {
		complete(k, now.Add(time.Hour))
	}
	if got := claimed(); len(got) != 0 {
		t.Errorf("ClaimedKeys after they completed = %q, want none", got)
	}
	settle(t, s)
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM idempotency_held`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("idempotency_held keeps %d claims after they completed, want none", n)
	}
}

// TestSQLiteFramesKeepTheirPlaceAfterAnUpgrade: a store of schema 7, where
// a frame put open again moved after its peers, lists its frames as it did
// once upgraded; a frame put open again since keeps its first place among
// the frames that started with it, below the mark of the settled frames
// or above it, however often it is put again.
func TestSQLiteFramesKeepTheirPlaceAfterAnUpgrade(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	w := oldDatabase(t, dir, 7)
	for _, q := range []string{
		`INSERT INTO frames (request, frame, state, started, updated) VALUES ('r', 'a', 'executing', 5, 5), ('r', 'b', 'executing', 5, 5), ('r', 'c', 'executing', 5, 5)`,
		`INSERT OR REPLACE INTO frames (request, frame, state, started, updated) VALUES ('r', 'a', 'waiting', 5, 6)`, // schema 7's put: a new row
	} {
		if _, err := w.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	s := openSQLite(t, dir, nil)
	listed := func(step string, want ...string) {
		t.Helper()
		all, err := s.RequestFrames(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		open, err := s.OpenFrames(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got, gotOpen, wantOpen []string
		for _, f := range all {
			got = append(got, f.Frame+" "+f.State)
			if !store.FrameDone(f.State) {
				wantOpen = append(wantOpen, f.Frame+" "+f.State)
			}
		}
		for _, f := range open {
			gotOpen = append(gotOpen, f.Frame+" "+f.State)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: RequestFrames (-want +got):\n%s", step, diff)
		}
		if diff := cmp.Diff(wantOpen, gotOpen); diff != "" {
			t.Errorf("%s: OpenFrames against RequestFrames' open ones (-want +got):\n%s", step, diff)
		}
	}
	listed("upgraded", "b executing", "c executing", "a waiting")
	put := func(id, state string) {
		t.Helper()
		if err := s.PutFrame(ctx, &store.Frame{Request: "r", Frame: id, Kind: "tool", Name: "pay", State: state, Started: time.Unix(0, 5)}); err != nil {
			t.Fatal(err)
		}
	}
	put("b", "completed")
	settle(t, s) // b below the mark, final; a and c held
	put("b", "waiting")
	put("d", "executing")
	listed("b put open again below the mark", "b waiting", "c executing", "a waiting", "d executing")
	put("c", "executing") // held, put open again
	put("b", "executing") // above the mark now, put open again
	settle(t, s)
	put("d", "failed")
	put("d", "executing")
	listed("each put open again", "b executing", "c executing", "a waiting", "d executing")
}
