package sqlite

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// TestSQLiteMigratesAPopulatedStoreToListedFrames: a store of the schema
// before migration 20, as a run leaves it (requests running and ended,
// frames below the mark final, a frame below it held open, frames above
// it open and final, a frame put open again after the mark passed it,
// keeping its first place in origin), keeps through the migration every
// frame of every request in its order, the open frames (the held one and
// those above the mark), the mark itself and the held list by rowid; and
// what is written after it (a new checkpoint, one put again, the mark
// moved) is found too.
func TestSQLiteMigratesAPopulatedStoreToListedFrames(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	before := slices.IndexFunc(migrations, func(m migration) bool { return m.version == 20 })
	w := oldDatabase(t, dir, before)
	for _, q := range []string{
		`INSERT INTO requests (id, state, started, updated) VALUES ('r1', 'running', 1, 1), ('r2', 'ended', 2, 2), ('r3', 'interrupted', 3, 3)`,
		// seq 1-5 below the mark (4), 3 held open; 5 is frame 02 of r1 put
		// open again (its first place was 2); 6-7 above the mark.
		`INSERT INTO frames (seq, request, frame, state, started, updated, origin) VALUES
			(1, 'r1', '0000000000000001', 'completed', 10, 10, NULL),
			(3, 'r2', '0000000000000003', 'executing', 30, 30, NULL),
			(4, 'r3', '0000000000000004', 'failed', 40, 40, NULL),
			(5, 'r1', '0000000000000002', 'executing', 20, 50, 2),
			(6, 'r2', '0000000000000006', 'completed', 60, 60, NULL),
			(7, 'r1', '0000000000000007', 'executing', 70, 70, NULL)`,
		`UPDATE store_meta SET value = 4 WHERE key = 'frames_settled'`,
		`INSERT INTO frames_held (frame) VALUES (3)`,
	} {
		if _, err := w.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	s := openSQLite(t, dir, nil) // migrates, then moves the mark (Open)
	ids := func(fs []*store.Frame) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Request+"/"+f.Frame+"/"+f.State)
		}
		return out
	}
	want := map[string][]string{
		"r1": {"r1/0000000000000001/completed", "r1/0000000000000002/executing", "r1/0000000000000007/executing"},
		"r2": {"r2/0000000000000003/executing", "r2/0000000000000006/completed"},
		"r3": {"r3/0000000000000004/failed"},
	}
	checkAll := func(when string) {
		t.Helper()
		for req, w := range want {
			fs, err := s.RequestFrames(ctx, req)
			if err != nil || !slices.Equal(ids(fs), w) {
				t.Errorf("%s: RequestFrames(%s) = %q, %v; want %q", when, req, ids(fs), err, w)
			}
		}
		var wantOpen []string
		for _, w := range want {
			for _, f := range w {
				if strings.HasSuffix(f, "/executing") {
					wantOpen = append(wantOpen, f)
				}
			}
		}
		open, err := s.OpenFrames(ctx)
		got := ids(open)
		slices.Sort(got)
		slices.Sort(wantOpen)
		if err != nil || !slices.Equal(got, wantOpen) {
			t.Errorf("%s: OpenFrames = %q, %v; want %q", when, got, err, wantOpen)
		}
	}
	checkAll("after the migration")
	var mark int64
	if err := s.r.QueryRow(`SELECT value FROM store_meta WHERE key = 'frames_settled'`).Scan(&mark); err != nil || mark != 7 {
		t.Errorf("the mark after the migration and Open = %d, %v; want 7, the last frame", mark, err)
	}
	rows, err := s.r.Query(`SELECT f.frame FROM frames_held h JOIN frames f ON f.rowid = h.frame ORDER BY f.frame`)
	if err != nil {
		t.Fatal(err)
	}
	var heldFrames []string
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			t.Fatal(err)
		}
		heldFrames = append(heldFrames, f)
	}
	rows.Close()
	if !slices.Equal(heldFrames, []string{"0000000000000002", "0000000000000003", "0000000000000007"}) {
		t.Errorf("the held frames after the migration = %q, want the three open ones by their rowids", heldFrames)
	}
	// Written after it: a new checkpoint, r2's open frame ended, r1's
	// first frame put open again; found before and after the mark moves.
	for _, f := range []*store.Frame{
		{Request: "r1", Frame: "0000000000000008", State: "executing", Started: time.Unix(0, 80)},
		{Request: "r2", Frame: "0000000000000003", State: "completed", Started: time.Unix(0, 30), EndOnly: true},
		{Request: "r1", Frame: "0000000000000001", State: "executing", Started: time.Unix(0, 10)},
	} {
		if err := s.PutFrame(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	want["r1"] = []string{"r1/0000000000000001/executing", "r1/0000000000000002/executing", "r1/0000000000000007/executing", "r1/0000000000000008/executing"}
	want["r2"] = []string{"r2/0000000000000003/completed", "r2/0000000000000006/completed"}
	checkAll("after the writes")
	if err := s.W.Do(ctx, s.settleMarks()); err != nil {
		t.Fatal(err)
	}
	checkAll("after the mark moved")
	s.Close()
	s = openSQLite(t, dir, nil)
	checkAll("after a restart")
}
