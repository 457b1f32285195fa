package sqlite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

// claimedKeys returns the keys ClaimedKeys lists (from the claims' mark
// and the held ones), sorted.
func claimedKeys(t *testing.T, s *Store) (keys []string) {
	t.Helper()
	recs, err := s.ClaimedKeys(t.Context())
	for _, r := range recs {
		keys = append(keys, r.Key)
	}
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// mustClaim claims key for owner at at, for an hour, or fails t.
func mustClaim(t *testing.T, s *Store, key, owner string, at time.Time) {
	t.Helper()
	if _, ok, err := s.ClaimKey(t.Context(), &store.IdemRecord{Key: key, Owner: owner, Claimed: at, Expires: at.Add(time.Hour)}); err != nil || !ok {
		t.Fatalf("ClaimKey(%s) = %v, %v", key, ok, err)
	}
}

// mustResult claims key for "reach/1" at at and records its result, which
// expires at expires, or fails t.
func mustResult(t *testing.T, s *Store, key string, at, expires time.Time) {
	t.Helper()
	mustClaim(t, s, key, "reach/1", at)
	if err := s.CompleteKey(t.Context(), key, "reach/1", []byte(`{}`), expires); err != nil {
		t.Fatal(err)
	}
}

// scanned returns the one text column of query q, in its order.
func scanned(t *testing.T, s *Store, q string) []string {
	t.Helper()
	rows, err := s.r.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// scannedClaims returns the keys of every record in state 'claimed', read
// by a scan of the whole table: what ClaimedKeys must list.
func scannedClaims(t *testing.T, s *Store) []string {
	t.Helper()
	return scanned(t, s, `SELECT key FROM idempotency WHERE state = 'claimed' ORDER BY key`)
}

// TestSQLiteClaimAfterTheLastRecordIsSwept: the sweep of expired results
// deletes the last records of the table after the claims' mark moved past
// them (the writer moves it every 4,096 rows and at Open); SQLite gives a
// new row the largest rowid + 1, so the next claim's row gets a rowid at
// or below the mark, and is not held. ClaimedKeys, and so recovery after a
// crash, must still list it.
func TestSQLiteClaimAfterTheLastRecordIsSwept(t *testing.T) {
	dir := t.TempDir()
	s := openSQLite(t, dir, nil)
	now := time.Now()
	mustResult(t, s, "a", now, now.Add(time.Hour))
	mustResult(t, s, "b", now, now.Add(time.Millisecond)) // short-lived, the last row
	settle(t, s)                                          // the mark at b's row
	if n, err := s.SweepKeys(t.Context(), now.Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("SweepKeys = %d, %v; want b's record swept", n, err)
	}
	mustClaim(t, s, "c", "reach/1", now) // the largest rowid + 1: b's, at the mark
	if diff := cmp.Diff([]string{"c"}, claimedKeys(t, s)); diff != "" {
		t.Errorf("ClaimedKeys after the last record was swept (-want +got):\n%s", diff)
	}

	// What a crash leaves: the next life's recovery lists the claim.
	s2 := openSQLite(t, dir, nil)
	if diff := cmp.Diff([]string{"c"}, claimedKeys(t, s2)); diff != "" {
		t.Errorf("ClaimedKeys after a restart (-want +got):\n%s", diff)
	}
}

// TestSQLiteClaimAfterTheLastClaimIsReleased: a claim that is the last
// row is held when the mark moves, then released (its row deleted); the
// mark moves again (at the next Open, or 4,096 rows later), which lets the
// held row go; a new claim then gets the released row's rowid, at the
// mark. ClaimedKeys must list it.
func TestSQLiteClaimAfterTheLastClaimIsReleased(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := openSQLite(t, dir, nil)
	now := time.Now()
	mustResult(t, s, "a", now, now.Add(time.Hour))
	mustClaim(t, s, "b", "reach/1", now)
	settle(t, s) // b is held
	if err := s.ReleaseKey(ctx, "b", "reach/1"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = openSQLite(t, dir, nil) // the mark moves at Open: b's row is let go
	mustClaim(t, s, "c", "reach/1", now)
	if diff := cmp.Diff([]string{"c"}, claimedKeys(t, s)); diff != "" {
		t.Errorf("ClaimedKeys after the last claim was released (-want +got):\n%s", diff)
	}
}

// TestSQLiteClaimAfterRecoveryDropsTheLastClaims: recovery settles the
// claims a crash left; one whose checkpoint never came is deleted. When
// those are the last rows, held at Open, and the mark moves before the
// next claim (the writer's move, 4,096 rows later, lets them go), the next
// claim reuses their rowid, at the mark; after another crash, recovery
// must still find it.
func TestSQLiteClaimAfterRecoveryDropsTheLastClaims(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, nil) // crashes: never closed but at the end
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	dead := "reach/00000000000000aa"
	claim := func(s *Store, owner, key, frame string) {
		t.Helper()
		r := &store.IdemRecord{Key: key, Owner: owner, Claimed: now, Expires: now.Add(time.Hour)}
		if frame != "" {
			// The claim names a checkpoint written with it: without it,
			// the call never started, and recovery drops the claim.
			r.Request, r.Frame = "r1", frame
			r.Executing = &store.Frame{Request: "r1", Frame: frame, Kind: "tool", Name: "pay", State: "executing", Started: now}
		}
		if _, ok, err := s.ClaimKey(ctx, r); err != nil || !ok {
			t.Fatalf("ClaimKey(%s) = %v, %v", key, ok, err)
		}
	}
	claim(s, dead, "k1", "f1")
	claim(s, dead, "k2", "f2")
	// Their checkpoints never came: a crash left only the claims.
	if _, err := s.wc.ExecContext(ctx, `DELETE FROM frames`); err != nil {
		t.Fatal(err)
	}

	s2, err := Open(ctx, dir, nil) // the next life; it crashes too
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	idem := store.NewIdempotency(s2, nil)
	settled, err := idem.Recover(ctx)
	if err != nil || len(settled) != 2 || settled[0].Outcome != store.SettledReleased || settled[1].Outcome != store.SettledReleased {
		t.Fatalf("Recover settled %d claims, %v; want 2 released", len(settled), err)
	}
	settle(t, s2) // the writer's move: the deleted claims are let go
	claim(s2, idem.Owner(), "k3", "")
	if diff := cmp.Diff([]string{"k3"}, claimedKeys(t, s2)); diff != "" {
		t.Errorf("ClaimedKeys (-want +got):\n%s", diff)
	}
	s3 := openSQLite(t, dir, nil)
	if diff := cmp.Diff([]string{"k3"}, claimedKeys(t, s3)); diff != "" {
		t.Errorf("ClaimedKeys after the second crash (-want +got):\n%s", diff)
	}
}

// scannedOpenFrames returns the frames not final, read by a scan of the
// whole table: what OpenFrames must list.
func scannedOpenFrames(t *testing.T, s *Store) []string {
	t.Helper()
	return scanned(t, s, `SELECT frame || ' ' || state FROM frames WHERE state NOT IN `+sqlcore.FinalStates+` ORDER BY 1`)
}

// sameAsScan fails t unless the claims and the open frames found from the
// marks are those a scan of every row finds.
func sameAsScan(t *testing.T, s *Store, step string) {
	t.Helper()
	if diff := cmp.Diff(scannedClaims(t, s), claimedKeys(t, s)); diff != "" {
		t.Fatalf("%s: ClaimedKeys against a scan (-scan +marks):\n%s", step, diff)
	}
	if diff := cmp.Diff(scannedOpenFrames(t, s), openFrameIDs(t, s)); diff != "" {
		t.Fatalf("%s: OpenFrames against a scan (-scan +marks):\n%s", step, diff)
	}
}

// randomStep writes one step of a random history to s, at step i: a
// claim, a result (some short-lived), a release, a sweep, a checkpoint put
// open, final or open again, or a move of the marks; it returns what it
// did. A conflict (a key not claimed, or held) is no error.
func randomStep(ctx context.Context, s *Store, rnd *rand.Rand, base time.Time, i int) (string, error) {
	const owner = "reach/1"
	states := []string{"executing", "waiting", "completed", "failed", "cancelled", "refused"}
	at := base.Add(time.Duration(i) * time.Millisecond)
	key := fmt.Sprintf("k%02d", rnd.IntN(24))
	var step string
	var err error
	switch op := rnd.IntN(97); {
	case op < 25:
		step = "claim " + key
		_, _, err = s.ClaimKey(ctx, &store.IdemRecord{Key: key, Owner: owner, Claimed: at, Expires: at.Add(time.Hour)})
	case op < 40:
		step = "complete " + key
		err = s.CompleteKey(ctx, key, owner, []byte(`{}`), at.Add(time.Duration(1+rnd.IntN(40))*time.Millisecond))
	case op < 48:
		step = "release " + key
		err = s.ReleaseKey(ctx, key, owner)
	case op < 53:
		step = "sweep"
		_, err = s.SweepKeys(ctx, at)
	case op < 88:
		f := &store.Frame{Request: "r" + fmt.Sprint(rnd.IntN(3)), Frame: fmt.Sprintf("f%02d", rnd.IntN(16)), Kind: "tool", Name: "pay",
			State: states[rnd.IntN(len(states))], Started: base}
		step = "frame " + f.Request + "/" + f.Frame + " " + f.State
		err = s.PutFrame(ctx, f)
	default:
		step = "settle"
		err = s.W.Do(ctx, s.settleMarks())
	}
	if errors.Is(err, store.ErrConflict) {
		err = nil
	}
	return step, err
}

// TestSQLiteMarksAgreeWithAScan: whatever the order of claims, results
// (some short-lived), releases, claims that take expired keys, sweeps,
// frames put open, final and open again, moves of the marks and reopens,
// the claims and open frames found from the marks are those a scan of
// every row finds, after every step.
func TestSQLiteMarksAgreeWithAScan(t *testing.T) {
	for seed := uint64(1); seed <= 2; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ctx := t.Context()
			dir := t.TempDir()
			s, err := Open(ctx, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { s.Close() }()
			rnd := rand.New(rand.NewPCG(seed, 5))
			base := time.Now()
			for i := range 600 {
				var step string
				if rnd.IntN(100) < 3 {
					step = "reopen"
					if rnd.IntN(2) == 0 {
						err = s.Close()
					} // else a crash: the old store stays open beside the new one
					if err == nil {
						old := s
						defer old.Close()
						s, err = Open(ctx, dir, nil)
					}
				} else {
					step, err = randomStep(ctx, s, rnd, base, i)
				}
				if err != nil {
					t.Fatalf("step %d, %s: %v", i, step, err)
				}
				sameAsScan(t, s, fmt.Sprintf("step %d, %s", i, step))
			}
		})
	}
}

// TestSQLiteMarksAgreeUnderConcurrentWrites: calls that claim, complete,
// release and put their checkpoints open, final and open again, 8 at a
// time, while the marks move in the same batches (queued as the
// checkpointer queues them, and waited for), leave the claims and open
// frames found from the marks those a scan finds, before and after a
// crash.
func TestSQLiteMarksAgreeUnderConcurrentWrites(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s, err := Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close() // after the crash below
	base := time.Now()
	stop := make(chan struct{})
	settled := make(chan int)
	go func() {
		n := 0
		defer func() { settled <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			s.W.TryQueue(s.settleMarks())
			if err := s.W.Do(ctx, s.settleMarks()); err != nil {
				t.Error(err)
				return
			}
			n++
		}
	}()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(g), 7))
			owner := fmt.Sprintf("reach/%d", g)
			for i := range 300 {
				at := base.Add(time.Duration(i) * time.Millisecond)
				key := fmt.Sprintf("g%d-k%d", g, rnd.IntN(6))
				f := &store.Frame{Request: fmt.Sprintf("r%d", g), Frame: fmt.Sprintf("f%d", rnd.IntN(6)), Kind: "tool", Name: "pay", Started: base}
				var err error
				switch op := rnd.IntN(6); op {
				case 0:
					_, _, err = s.ClaimKey(ctx, &store.IdemRecord{Key: key, Owner: owner, Claimed: at, Expires: at.Add(time.Hour)})
				case 1:
					err = s.CompleteKey(ctx, key, owner, []byte(`{}`), at.Add(time.Duration(1+rnd.IntN(20))*time.Millisecond))
				case 2:
					err = s.ReleaseKey(ctx, key, owner)
				case 3:
					_, err = s.SweepKeys(ctx, at)
				case 4:
					f.State = []string{"executing", "waiting"}[rnd.IntN(2)]
					err = s.PutFrame(ctx, f)
				case 5:
					f.State = "completed"
					s.QueueFrame(f)
				}
				if err != nil && !errors.Is(err, store.ErrConflict) {
					t.Errorf("goroutine %d, step %d: %v", g, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	if n := <-settled; n == 0 {
		t.Fatal("the marks never moved")
	}
	if err := s.W.Do(ctx, &sqlcore.Write{Run: func(sqlcore.Batch, *sqlcore.Write) {}}); err != nil {
		t.Fatal(err) // the queued frames are written
	}
	sameAsScan(t, s, "after the writes")
	if len(scannedClaims(t, s)) == 0 || len(scannedOpenFrames(t, s)) == 0 {
		t.Fatal("no claim or open frame left: the test checks nothing")
	}
	s2 := openSQLite(t, dir, nil) // a crash: s is not closed
	sameAsScan(t, s2, "after a crash")
}

// writeWithHoles writes n calls to s, each a claim and its "executing"
// checkpoint, and then by turns: a result, the checkpoint completed; the
// claim released (its row deleted: a hole), the checkpoint waiting (a new
// row: a hole where it was); the claim and checkpoint left as they are; a
// short-lived result (swept after), the checkpoint failed. The marks move
// after call settleAt (none if negative).
func writeWithHoles(t *testing.T, s *Store, n, settleAt int) {
	t.Helper()
	ctx := t.Context()
	now := time.Now()
	for i := range n {
		key := fmt.Sprintf("k%02d", i)
		mustClaim(t, s, key, "reach/1", now)
		f := &store.Frame{Request: "r1", Frame: fmt.Sprintf("f%02d", i), Kind: "tool", Name: "pay", State: "executing", Started: now}
		if err := s.PutFrame(ctx, f); err != nil {
			t.Fatal(err)
		}
		var err error
		switch i % 4 {
		case 0:
			err = s.CompleteKey(ctx, key, "reach/1", []byte(`{}`), now.Add(time.Hour))
			f.State = "completed"
		case 1:
			err = s.ReleaseKey(ctx, key, "reach/1")
			f.State = "waiting"
		case 3:
			err = s.CompleteKey(ctx, key, "reach/1", []byte(`{}`), now.Add(time.Millisecond))
			f.State = "failed"
		}
		if err != nil {
			t.Fatal(err)
		}
		if i%4 != 2 {
			if err := s.PutFrame(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		if i == settleAt {
			settle(t, s)
		}
	}
}

// newRowsFound writes a claim and an open frame to s, and fails t unless
// the claims and open frames found from the marks are those a scan finds.
func newRowsFound(t *testing.T, s *Store, step string) {
	t.Helper()
	ctx := t.Context()
	now := time.Now()
	mustClaim(t, s, "new", "reach/2", now)
	if err := s.PutFrame(ctx, &store.Frame{Request: "r2", Frame: "new", Kind: "tool", Name: "pay", State: "executing", Started: now}); err != nil {
		t.Fatal(err)
	}
	sameAsScan(t, s, step)
}

// TestSQLiteMarksAgreeAfterVacuum: VACUUM (run by an operator to shrink
// the file; SQLite says it may change the rowids of a table without an
// INTEGER PRIMARY KEY, as frames and idempotency are) leaves the claims and
// open frames found from the marks and held lists those a scan finds,
// with rows deleted and replaced below the marks and held ones among them.
func TestSQLiteMarksAgreeAfterVacuum(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := openSQLite(t, dir, nil)
	writeWithHoles(t, s, 40, 20) // held ones, and rows below the mark
	if _, err := s.SweepKeys(ctx, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	settle(t, s)
	sameAsScan(t, s, "before VACUUM")
	before := claimedKeys(t, s)
	// Holes in both tables' rowids, which a VACUUM that renumbered rows
	// would close, below the marks.
	rowids := func() string {
		t.Helper()
		var out string
		for _, tc := range [][2]string{{"frames", "frame"}, {"idempotency", "key"}} {
			var n, last int
			var all string
			if err := s.r.QueryRow(`SELECT count(*), max(rowid), group_concat(rowid || '=' || `+tc[1]+`) FROM `+tc[0]).Scan(&n, &last, &all); err != nil {
				t.Fatal(err)
			}
			if n >= last {
				t.Fatalf("%s: %d rows up to rowid %d, no holes: the test checks nothing", tc[0], n, last)
			}
			out += all + "\n"
		}
		return out
	}
	was := rowids()
	if _, err := s.wc.ExecContext(ctx, `VACUUM`); err != nil {
		t.Fatal(err)
	}
	if now := rowids(); now != was {
		t.Logf("VACUUM renumbered the rows:\n%s\nto\n%s", was, now)
	}
	sameAsScan(t, s, "after VACUUM")
	if diff := cmp.Diff(before, claimedKeys(t, s)); diff != "" {
		t.Errorf("ClaimedKeys after VACUUM (-before +after):\n%s", diff)
	}
	newRowsFound(t, s, "after new rows")
	s.Close()
	sameAsScan(t, openSQLite(t, dir, nil), "after a reopen")
}

// dumpAndRestore copies the store in from into a new store in to as
// `sqlite3 from/reach.db .dump | sqlite3 to/reach.db` does: the rows of
// every table in the order of their rowids, with every column they
// declare and not the hidden rowid of a table without an INTEGER PRIMARY
// KEY (which the restore numbers again from 1).
func dumpAndRestore(t *testing.T, from, to string) {
	t.Helper()
	s := openSQLite(t, to, nil) // the schema, empty
	s.Close()
	db, err := OpenFile(filepath.Join(to, DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	exec := func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`ATTACH '` + filepath.Join(from, DefaultFile) + `' AS old`)
	for _, table := range []string{"frames", "idempotency", "frames_held", "idempotency_held", "store_meta"} {
		exec(`DELETE FROM main.` + table)
		exec(`INSERT INTO main.` + table + ` SELECT * FROM old.` + table + ` ORDER BY rowid`)
	}
}

// TestSQLiteMarksAgreeAfterADumpAndRestore: a store copied row by row
// (sqlite3's .dump, restored) with holes in its rowids below the marks and
// held rows among them, finds the claims and open frames a scan finds.
func TestSQLiteMarksAgreeAfterADumpAndRestore(t *testing.T) {
	dir := t.TempDir()
	s := openSQLite(t, dir, nil)
	writeWithHoles(t, s, 12, -1)
	if _, err := s.SweepKeys(t.Context(), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	settle(t, s) // everything below the marks, the open rows held
	sameAsScan(t, s, "before the dump")
	s.Close()

	to := t.TempDir()
	dumpAndRestore(t, dir, to)
	r := openSQLite(t, to, nil)
	sameAsScan(t, r, "after the restore")
	newRowsFound(t, r, "after new rows")
}

// TestSQLiteRowidsKeptByTheirColumn: a store of schema 6 (frames with a
// hidden rowid, holes among them; idempotency records WITHOUT ROWID) is
// migrated with every frame at the rowid it had, now its seq, and the
// records numbered in the order they were claimed (then by key); the
// claims and open frames found from the marks are those a scan finds, and
// still are after rows are written past the marks and held below them,
// and a dump and restore.
func TestSQLiteRowidsKeptByTheirColumn(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	w := oldDatabase(t, dir, 6)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := w.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	states := []string{"completed", "executing", "waiting", "failed"}
	for i := range 12 {
		exec(`INSERT INTO frames (request, frame, kind, name, state, started, updated) VALUES ('r0', ?, 'tool', 'pay', ?, ?, ?)`,
			fmt.Sprintf("f%02d", i), states[i%4], i, i)
		// claimed out of the keys' order, two at a time
		exec(`INSERT INTO idempotency (key, owner, state, args, request, frame, claimed, expires) VALUES (?, 'reach/0', ?, 'd', 'r0', ?, ?, ?)`,
			fmt.Sprintf("old%02d", 11-i), []string{"done", "claimed"}[i%2], fmt.Sprintf("f%02d", i), i/2, time.Now().Add(time.Hour).UnixNano())
	}
	// Holes in the frames' rowids, and a frame put again: its row moves to
	// the end.
	exec(`DELETE FROM frames WHERE frame IN ('f03', 'f08')`)
	exec(`INSERT OR REPLACE INTO frames (request, frame, state, started, updated) VALUES ('r0', 'f01', 'executing', 20, 20)`)
	var frames, keys string
	if err := w.QueryRow(`SELECT (SELECT group_concat(rowid || '=' || frame || ' ' || state) FROM (SELECT rowid, * FROM frames ORDER BY rowid)),
		(SELECT group_concat(n || '=' || key || ' ' || state) FROM (SELECT row_number() OVER (ORDER BY claimed, key) AS n, key, state FROM idempotency ORDER BY n))`).Scan(&frames, &keys); err != nil {
		t.Fatal(err)
	}
	w.Close()

	s := openSQLite(t, dir, nil)
	if v, err := s.SchemaVersion(ctx); err != nil || v < 7 {
		t.Fatalf("SchemaVersion = %d, %v; want 7 or later", v, err)
	}
	var gotFrames, gotKeys string
	if err := s.r.QueryRow(`SELECT (SELECT group_concat(seq || '=' || frame || ' ' || state) FROM (SELECT * FROM frames ORDER BY rowid)),
		(SELECT group_concat(seq || '=' || key || ' ' || state) FROM (SELECT * FROM idempotency ORDER BY rowid))`).Scan(&gotFrames, &gotKeys); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(frames, gotFrames); diff != "" {
		t.Errorf("the frames' seqs after the migration against their rowids before (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(keys, gotKeys); diff != "" {
		t.Errorf("the records' seqs after the migration against their order by claimed, key (-want +got):\n%s", diff)
	}
	sameAsScan(t, s, "after the migration")
	if len(scannedClaims(t, s)) == 0 || len(scannedOpenFrames(t, s)) == 0 {
		t.Fatal("no claim or open frame: the test checks nothing")
	}
	writeWithHoles(t, s, 12, 7) // held rows and holes below the marks, more above
	sameAsScan(t, s, "after rows past the marks")
	s.Close()
	to := t.TempDir()
	dumpAndRestore(t, dir, to)
	sameAsScan(t, openSQLite(t, to, nil), "after a dump and restore")
}

// TestSQLiteMarksAgreeAfterKills: a process that writes a random history
// (randomStep) with the marks moving among its writes, killed (SIGKILL) at
// a random moment, leaves a store whose claims and open frames found from
// the marks, at the next Open, are those a scan finds; five times over the
// same store.
func TestSQLiteMarksAgreeAfterKills(t *testing.T) {
	if dir := os.Getenv("REACH_TEST_MARKS_CHILD"); dir != "" {
		// The child: writes until it is killed.
		ctx := context.Background()
		s, err := Open(ctx, dir, nil)
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(1)
		}
		rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
		base := time.Now()
		for i := 0; ; i++ {
			if _, err := randomStep(ctx, s, rnd, base, i); err != nil {
				fmt.Println("step:", err)
				os.Exit(1)
			}
			if i == 200 {
				fmt.Println("writing")
			}
		}
	}
	if testing.Short() {
		t.Skip("kills processes: skipped in -short mode")
	}
	dir := t.TempDir()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 10))
	for round := range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSQLiteMarksAgreeAfterKills$")
		cmd.Env = append(os.Environ(), "REACH_TEST_MARKS_CHILD="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if line != "writing\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: the child said %q, %v", round, line, err)
		}
		time.Sleep(time.Duration(rnd.IntN(200)) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		s := openSQLite(t, dir, nil)
		sameAsScan(t, s, fmt.Sprintf("round %d", round))
		s.Close()
	}
}

// TestSQLiteMigratesMidTableClaimsAndFrames: a store of schema 6 whose
// claims and open frames sit between finished records (a result before and
// after each, an expired one last) is migrated by a command that only
// reads (NoCreate), which lists them without moving the marks; the next
// Open holds them, and they are still found after rows are written past
// them, the marks move and the store is opened again after a crash;
// recovery then settles every claim.
func TestSQLiteMigratesMidTableClaimsAndFrames(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := oldDatabase(t, dir, 6)
	t0 := time.Now().Add(-time.Minute).UnixNano()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := w.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	dead := "reach/00000000000000dd"
	for i, r := range []struct{ key, state string }{
		{"k1", "done"}, {"k2", "claimed"}, {"k3", "done"}, {"k4", "claimed"}, {"k5", "done"},
	} {
		exp := time.Now().Add(time.Hour).UnixNano()
		if r.key == "k5" {
			exp = t0 // expired: swept
		}
		var result any
		if r.state == "done" {
			result = []byte(`{"status":"success"}`)
		}
		exec(`INSERT INTO idempotency (key, owner, state, args, request, frame, result, claimed, expires) VALUES (?, ?, ?, 'd', 'r1', ?, ?, ?, ?)`,
			r.key, dead, r.state, fmt.Sprintf("f%d", i+1), result, t0+int64(i), exp)
	}
	for i, state := range []string{"completed", "executing", "completed", "waiting", "failed"} {
		exec(`INSERT INTO frames (request, frame, kind, name, idem_key, state, started, updated) VALUES ('r1', ?, 'tool', 'pay', ?, ?, ?, ?)`,
			fmt.Sprintf("f%d", i+1), fmt.Sprintf("k%d", i+1), state, t0+int64(i), t0)
	}
	w.Close()

	wantClaims, wantOpen := []string{"k2", "k4"}, []string{"f2 executing", "f4 waiting"}
	check := func(s *Store, step string) {
		t.Helper()
		if diff := cmp.Diff(wantClaims, claimedKeys(t, s)); diff != "" {
			t.Errorf("%s: ClaimedKeys (-want +got):\n%s", step, diff)
		}
		if diff := cmp.Diff(wantOpen, openFrameIDs(t, s)); diff != "" {
			t.Errorf("%s: OpenFrames (-want +got):\n%s", step, diff)
		}
	}
	marks := func(s *Store) (frames, claims int64) {
		t.Helper()
		if err := s.r.QueryRow(`SELECT (SELECT value FROM store_meta WHERE key = 'frames_settled'),
			(SELECT value FROM store_meta WHERE key = 'claims_settled')`).Scan(&frames, &claims); err != nil {
			t.Fatal(err)
		}
		return frames, claims
	}

	ro := openSQLite(t, dir, &Options{NoCreate: true})
	check(ro, "read-only, just migrated")
	if f, c := marks(ro); f != 0 || c != 0 {
		t.Errorf("a read-only Open moved the marks to %d, %d; want 0, 0", f, c)
	}
	ro.Close()

	s, err := Open(ctx, dir, nil) // crashes: not closed until the end
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if f, c := marks(s); f != 5 || c != 5 {
		t.Errorf("Open moved the marks to %d, %d; want both at the last row, 5", f, c)
	}
	check(s, "after Open")
	if n, err := s.SweepKeys(ctx, time.Now()); err != nil || n != 1 {
		t.Fatalf("SweepKeys = %d, %v; want k5's result swept", n, err)
	}
	now := time.Now()
	for i := range 5 {
		key := fmt.Sprintf("n%d", i)
		mustClaim(t, s, key, "reach/2", now)
		if i == 0 {
			continue // n0 stays claimed, on the rowid of k5's swept result
		}
		if err := s.CompleteKey(ctx, key, "reach/2", []byte(`{}`), now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := s.PutFrame(ctx, &store.Frame{Request: "r2", Frame: key, Kind: "tool", Name: "pay", State: "completed", Started: now}); err != nil {
			t.Fatal(err)
		}
	}
	wantClaims = []string{"k2", "k4", "n0"}
	settle(t, s)
	check(s, "after rows past them and a move of the marks")

	s2 := openSQLite(t, dir, nil)
	check(s2, "after a crash")
	idem := store.NewIdempotency(s2, nil)
	settled, err := idem.Recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, st := range settled {
		keys = append(keys, st.Claim.Key)
	}
	if diff := cmp.Diff(wantClaims, keys); diff != "" {
		t.Errorf("Recover settled (-want +got):\n%s", diff)
	}
	if got := claimedKeys(t, s2); len(got) != 0 {
		t.Errorf("ClaimedKeys after recovery = %q, want none", got)
	}
}

// TestSQLiteDeletesBringTheClaimsMarkDown: every statement of the writer
// that deletes idempotency records (or replaces one, which deletes it) is
// followed by the one that brings the claims' mark down, and none deletes
// frames but the retention sweep's, followed by stFramesLower.
func TestSQLiteDeletesBringTheClaimsMarkDown(t *testing.T) {
	records := regexp.MustCompile(`(?i)(DELETE FROM|REPLACE INTO)\s+idempotency\b`)
	frames := regexp.MustCompile(`(?i)DELETE FROM\s+frames\b`)
	for id, q := range statementSQL {
		deletes := records.MatchString(q)
		if deletes != deletesRecords(stmtID(id)) {
			t.Errorf("statement %d deletes records: %v, followed by stClaimsLower: %v\n%s", id, deletes, deletesRecords(stmtID(id)), q)
		}
		if frames.MatchString(q) && id != int(sqlcore.StRetainFrames) {
			t.Errorf("statement %d deletes frames, and nothing brings their mark down:\n%s", id, q)
		}
	}
}
