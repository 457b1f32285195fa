package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

// countKeys returns how many idempotency records match where.
func countKeys(t *testing.T, s *Store, where string) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM idempotency WHERE ` + where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The queued sweep (QueueSweepKeys) looks at sweepSpan records a time, the
// next ones in their order, and goes round: after enough sweeps every
// expired result is deleted, and only those; a result that expires after
// the pass went by is deleted by the next pass. The store keeps no index of
// the results by expiry (migration 11).
func TestQueuedSweepGoesRound(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := oldDatabase(t, dir, len(migrations))
	const n = 2*sweepSpan + 1000
	now := time.Now()
	// Records 1 to n, claimed in that order: every tenth a claim (never
	// swept, whatever its lease), every tenth + 1 a result that has not
	// expired, every tenth + 2 one that never does (expires 0), the others
	// results that expired.
	if _, err := w.Exec(`WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < ?)
		INSERT INTO idempotency (key, owner, state, result, claimed, expires)
		SELECT 'k' || x, 'reach/1', CASE x % 10 WHEN 0 THEN 'claimed' ELSE 'done' END,
			CASE x % 10 WHEN 0 THEN NULL ELSE '{}' END, ?,
			CASE x % 10 WHEN 0 THEN 1 WHEN 1 THEN ? WHEN 2 THEN 0 ELSE 1 END
		FROM i`, n, now.Add(-time.Hour).UnixNano(), now.Add(time.Hour).UnixNano()); err != nil {
		t.Fatal(err)
	}
	w.Close()
	s := openSQLite(t, dir, nil)
	var idx int
	if err := s.r.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'idempotency_expires'`).Scan(&idx); err != nil || idx != 0 {
		t.Fatalf("the index of expiring results: %d, %v; want none", idx, err)
	}
	sweep := func() {
		t.Helper()
		s.QueueSweepKeys(now)
		if err := flush(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	expired := func(upto int) int { // records 1 to upto that are expired results
		e := 0
		for x := 1; x <= upto; x++ {
			if x%10 > 2 {
				e++
			}
		}
		return e
	}
	kept := n - expired(n) // the claims, the live results and those that never expire
	for i, want := range []int{n - expired(sweepSpan), n - expired(2*sweepSpan), kept} {
		sweep()
		if got := countKeys(t, s, `true`); got != want {
			t.Fatalf("after sweep %d: %d records, want %d", i+1, got, want)
		}
	}
	if got := countKeys(t, s, `state = 'claimed'`); got != n/10 {
		t.Errorf("%d claims left, want %d: a claim was swept", got, n/10)
	}
	if got := countKeys(t, s, `expires = 0`); got != (n+8)/10 {
		t.Errorf("%d results that never expire left, want %d", got, (n+8)/10)
	}

	// The pass went by k1; k1's result then expires, and a new result is
	// added that expired: the pass ends (an empty span), and the next one
	// finds both.
	var uerr error
	if err := s.W.Do(ctx, &sqlcore.Write{Run: func(b sqlcore.Batch, _ *sqlcore.Write) {
		_, uerr = b.(*batch).s.wc.ExecContext(bg, `UPDATE idempotency SET expires = 1 WHERE key = 'k1'`)
	}}); err != nil || uerr != nil {
		t.Fatal(err, uerr)
	}
	if _, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: "new", Owner: "reach/1", Claimed: now, Expires: now}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.CompleteKey(ctx, "new", "reach/1", []byte(`{}`), now.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	for range n/sweepSpan + 2 { // the pass's end (an empty span), then the next pass
		sweep()
	}
	if got := countKeys(t, s, `key IN ('k1', 'new')`); got != 0 {
		t.Errorf("%d of k1 and new left after the next pass, want none", got)
	}
	if got := countKeys(t, s, `true`); got != kept-1 {
		t.Errorf("%d records after the next pass, want %d (k1 gone)", got, kept-1)
	}
}

// A store of schema 10 (with the index of expiring results) opens with
// its records: its claims are still found, its results still answer their
// keys, and the queued sweep deletes its expired ones.
func TestSQLiteMigratesExpiryIndexAway(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := oldDatabase(t, dir, 10)
	now := time.Now()
	for _, r := range []struct {
		key, state string
		result     any
		expires    int64
	}{
		{"claimed", store.IdemClaimed, nil, now.Add(time.Hour).UnixNano()},
		{"live", store.IdemDone, `{"status":"success","data":"R-1"}`, now.Add(time.Hour).UnixNano()},
		{"expired", store.IdemDone, `{}`, now.Add(-time.Hour).UnixNano()},
	} {
		if _, err := w.Exec(`INSERT INTO idempotency (key, owner, state, args, request, frame, result, claimed, expires)
			VALUES (?, 'reach/1', ?, 'd', 'r1', ?, ?, ?, ?)`, r.key, r.state, "f-"+r.key, r.result, now.Add(-2*time.Hour).UnixNano(), r.expires); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()

	s := openSQLite(t, dir, nil)
	claims, err := s.ClaimedKeys(ctx)
	if err != nil || len(claims) != 1 || claims[0].Key != "claimed" || claims[0].Frame != "f-claimed" {
		t.Fatalf("ClaimedKeys after the migration = %v, %v; want the claim of key claimed", claims, err)
	}
	rec, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: "live", Owner: "reach/2", Args: "d", Claimed: now, Expires: now.Add(time.Hour)})
	if err != nil || ok || rec.State != store.IdemDone || string(rec.Result) != `{"status":"success","data":"R-1"}` {
		t.Fatalf("ClaimKey(live) = %+v, %v, %v; want its recorded result", rec, ok, err)
	}
	s.QueueSweepKeys(now)
	if err := flush(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got := countKeys(t, s, `key = 'expired'`); got != 0 {
		t.Errorf("the expired result is left after the queued sweep")
	}
	if got := countKeys(t, s, `key IN ('claimed', 'live')`); got != 2 {
		t.Errorf("%d of the claim and the live result left after the sweep, want 2", got)
	}
}

// A span begins at the first record after the span before: a gap of
// deleted records (rowids that no record holds any more) costs the pass
// no sweep.
func TestQueuedSweepSkipsGaps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := oldDatabase(t, dir, len(migrations))
	now := time.Now()
	// Expired results at rowids 1 to 10, and 10 more a hundred spans on.
	for _, from := range []int{1, 100*sweepSpan + 1} {
		if _, err := w.Exec(`WITH RECURSIVE i(x) AS (SELECT ? UNION ALL SELECT x + 1 FROM i WHERE x < ? + 9)
			INSERT INTO idempotency (rowid, key, owner, state, result, claimed, expires)
			SELECT x, 'k' || x, 'reach/1', 'done', '{}', 1, 1 FROM i`, from, from); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	s := openSQLite(t, dir, nil)
	for i, want := range []int{10, 0} {
		s.QueueSweepKeys(now)
		if err := flush(ctx, s); err != nil {
			t.Fatal(err)
		}
		if got := countKeys(t, s, `true`); got != want {
			t.Fatalf("after sweep %d: %d records, want %d", i+1, got, want)
		}
	}
}
