package sqlite

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

// requestFrameIDs returns the frame ids of request's frames, in the order
// RequestFrames lists them.
func requestFrameIDs(t *testing.T, s *Store, request string) []string {
	t.Helper()
	fs, err := s.RequestFrames(t.Context(), request)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range fs {
		if f.Request != request {
			t.Errorf("RequestFrames(%s) listed a frame of %s", request, f.Request)
		}
		ids = append(ids, f.Frame)
	}
	return ids
}

// TestRequestFramesListedAndNot: a request's frames are found whether the
// mark of the settled frames has passed them (listed: by the index of
// their request) or not yet (above the mark), each once, a frame put open
// again after it was listed too, and the frames written since are listed
// when the mark moves past them. Without the frames above the mark read,
// or without the settling listing them, some would be missing.
func TestRequestFramesListedAndNot(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s := openSQLite(t, dir, nil)
	put := func(req string, n int, state string) {
		t.Helper()
		f := &store.Frame{Request: req, Frame: fmt.Sprintf("%016x", n), Kind: "tool", Name: "pay", State: state, Started: time.Unix(0, int64(n))}
		if err := s.PutFrame(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 6; i++ {
		put("r1", i, "completed")
		put("r2", 100+i, "completed")
	}
	if err := s.W.Do(ctx, s.settleMarks()); err != nil {
		t.Fatal(err)
	}
	put("r1", 7, "executing")   // above the mark, not listed
	put("r1", 3, "executing")   // listed, put open again: moved above the mark
	put("r2", 107, "executing") // another request's, above the mark
	want := []string{"0000000000000001", "0000000000000002", "0000000000000003", "0000000000000004", "0000000000000005",
		"0000000000000006", "0000000000000007"}
	if got := requestFrameIDs(t, s, "r1"); !slices.Equal(got, want) {
		t.Fatalf("RequestFrames(r1) before the mark moves = %q, want %q", got, want)
	}
	var unlisted int
	if err := s.r.QueryRow(`SELECT count(*) FROM frames WHERE NOT listed`).Scan(&unlisted); err != nil || unlisted != 2 {
		t.Fatalf("%d frames not listed (%v), want the 2 new ones", unlisted, err)
	}
	if err := s.W.Do(ctx, s.settleMarks()); err != nil {
		t.Fatal(err)
	}
	if err := s.r.QueryRow(`SELECT count(*) FROM frames WHERE NOT listed`).Scan(&unlisted); err != nil || unlisted != 0 {
		t.Fatalf("%d frames not listed (%v) after the mark moved, want none", unlisted, err)
	}
	if got := requestFrameIDs(t, s, "r1"); !slices.Equal(got, want) {
		t.Fatalf("RequestFrames(r1) after the mark moved = %q, want %q", got, want)
	}
	if got := requestFrameIDs(t, s, "r2"); len(got) != 7 {
		t.Fatalf("RequestFrames(r2) = %q, want its 7 frames", got)
	}
	// A crash (s not closed) with a frame above the mark: the next life
	// finds it, and lists it as it opens.
	put("r1", 8, "executing")
	s2 := openSQLite(t, dir, nil)
	if got := requestFrameIDs(t, s2, "r1"); len(got) != 8 || got[7] != "0000000000000008" {
		t.Fatalf("RequestFrames(r1) after a crash = %q, want its 8 frames", got)
	}
}

// TestRequestFramesUseTheirIndexes: a request's frames, and the frames of
// the requests a retention sweep removes, are read by the index of their
// request and the rowids above the mark, not by a scan of every frame.
func TestRequestFramesUseTheirIndexes(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	for _, c := range []struct {
		what string
		q    string
		args []any
	}{
		{"a request's frames", s.D.FrameSelect + ` WHERE ` + requestFrames, []any{"r1"}},
		{"the sweep's frames", statementSQL[sqlcore.StRetainFrames], []any{int64(1), int64(64)}},
	} {
		plan := queryPlan(t, s.wc, c.q, c.args...)
		if !strings.Contains(plan, "frames USING INDEX frames_request (request=?)") ||
			!strings.Contains(plan, "frames USING INTEGER PRIMARY KEY (rowid>?)") {
			t.Errorf("the plan of %s is %q, want the index of the request and the rowids above the mark", c.what, plan)
		}
		if strings.Contains(plan, "SCAN frames") {
			t.Errorf("the plan of %s is %q, want no scan of the frames", c.what, plan)
		}
	}
}

// TestSQLiteMigratesFramesListed: a store of schema 19 keeps its frames
// through migration 20: each is listed, found by its request, and unique
// by its request and frame as before (a frame put again replaces its row).
func TestSQLiteMigratesFramesListed(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	w := oldDatabase(t, dir, 19)
	if _, err := w.Exec(`INSERT INTO frames (request, frame, state, started, updated) VALUES
		('r1', '0000000000000001', 'completed', 1, 1), ('r1', '0000000000000002', 'executing', 2, 2), ('r2', '0000000000000001', 'completed', 3, 3)`); err != nil {
		t.Fatal(err)
	}
	w.Close()
	s := openSQLite(t, dir, nil)
	var unlisted int
	if err := s.r.QueryRow(`SELECT count(*) FROM frames WHERE NOT listed`).Scan(&unlisted); err != nil || unlisted != 0 {
		t.Fatalf("%d frames not listed (%v) after the migration, want none", unlisted, err)
	}
	if got := requestFrameIDs(t, s, "r1"); !slices.Equal(got, []string{"0000000000000001", "0000000000000002"}) {
		t.Fatalf("RequestFrames(r1) after the migration = %q", got)
	}
	if err := s.PutFrame(ctx, &store.Frame{Request: "r1", Frame: "0000000000000002", State: "completed", Started: time.Unix(0, 2)}); err != nil {
		t.Fatal(err)
	}
	fs, err := s.RequestFrames(ctx, "r1")
	if err != nil || len(fs) != 2 || fs[1].State != "completed" {
		t.Fatalf("RequestFrames(r1) after its frame was put again = %d frames, %v", len(fs), err)
	}
	open, err := s.OpenFrames(ctx)
	if err != nil || len(open) != 0 {
		t.Fatalf("OpenFrames = %d, %v; want none", len(open), err)
	}
}
