package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
)

// The tests of what several instances share: each opens the database
// twice, as two gateway instances would.

func twoPostgres(t *testing.T) (*Store, *Store, string) {
	t.Helper()
	url := pgtest.Database(t)
	return openPostgres(t, url), openPostgres(t, url), url
}

// Instances that start together migrate once; a database of a newer
// schema is refused.
func TestPostgresMigrateConcurrently(t *testing.T) {
	url := pgtest.Database(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := Open(t.Context(), url, nil)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s := openPostgres(t, url)
	v, err := s.SchemaVersion(t.Context())
	if err != nil || v != latestMigration() {
		t.Fatalf("SchemaVersion = %d, %v", v, err)
	}
	if _, err := s.pool.Exec(t.Context(), `INSERT INTO schema_migrations (version, name, applied) VALUES (999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), url, nil); err == nil || !strings.Contains(err.Error(), "upgrade reach") {
		t.Fatalf("opening a database of a newer schema = %v, want a refusal saying to upgrade", err)
	}
}

// A version the database lacks is applied even below the newest it has:
// two branches may add versions 4 and 5 apart, and a database that has 5
// still gets 4.
func TestPostgresMigrateGap(t *testing.T) {
	url := pgtest.Database(t)
	s := openPostgres(t, url)
	if _, err := s.pool.Exec(t.Context(), `DROP TABLE tasks; DELETE FROM schema_migrations WHERE version = 3`); err != nil {
		t.Fatal(err)
	}
	s2 := openPostgres(t, url)
	var n int
	if err := s2.pool.QueryRow(t.Context(), `SELECT count(*) FROM tasks`).Scan(&n); err != nil {
		t.Fatalf("migration 3, missing below the newest, was not applied again: %v", err)
	}
}

// A server that cannot be reached fails at once, saying where.
func TestPostgresUnreachable(t *testing.T) {
	start := time.Now()
	_, err := Open(t.Context(), "postgres://reach@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", nil)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1/none") {
		t.Fatalf("Open(unreachable) = %v, want an error naming 127.0.0.1:1/none", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("Open(unreachable) took %s", d)
	}
	if _, err := Open(t.Context(), "postgres://%zz", nil); err == nil || !strings.Contains(err.Error(), "postgres://USER@HOST") {
		t.Fatalf("Open(bad URL) = %v, want the URL's form", err)
	}
}

// Two instances debiting one ledger never pass its cap together.
func TestPostgresLedgerTwoInstances(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	var passed atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			_, ok, err := s.Debit(ctx, "r", store.Spend{ToolCalls: 1}, store.Spend{ToolCalls: 7})
			if err != nil {
				t.Error(err)
			}
			if ok {
				passed.Add(1)
			}
		})
	}
	wg.Wait()
	if sp, _ := a.Spent(ctx, "r"); passed.Load() != 7 || sp.ToolCalls != 7 {
		t.Fatalf("%d debits passed, %d spent; want 7 and 7", passed.Load(), sp.ToolCalls)
	}
}

// A batch whose one write fails in the database commits the others: the
// writer sends it again without it.
func TestPostgresBatchWithoutTheFailedWrite(t *testing.T) {
	s := openPostgres(t, pgtest.Database(t))
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() {
			f := &store.Frame{Request: "r", Frame: fmt.Sprintf("%016x", i+1), Kind: "tool", Name: "t", State: "executing", Started: t0}
			if i == 7 {
				f.Args = []byte("\x00") // no TEXT holds a NUL: the database refuses this one
			}
			errs[i] = s.PutFrame(ctx, f)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if (err != nil) != (i == 7) {
			t.Errorf("PutFrame %d = %v", i, err)
		}
	}
	fs, err := s.RequestFrames(ctx, "r")
	if err != nil || len(fs) != 19 {
		t.Fatalf("%d frames stored (%v), want 19", len(fs), err)
	}
}

// The claim of a checkpointed call is answered before its batch commits,
// so that its checkpoint can follow in the same transaction; both are
// stored.
func TestPostgresClaimCommitsWithCheckpoint(t *testing.T) {
	s := openPostgres(t, pgtest.Database(t))
	ctx := t.Context()
	before := s.WriterStats().Batches
	for i := range 20 {
		key := fmt.Sprintf("k%d", i)
		frame := fmt.Sprintf("%016x", i+1)
		_, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: key, Owner: "a/1", Request: "r", Frame: frame, Claimed: time.Now()})
		if err != nil || !ok {
			t.Fatalf("ClaimKey = %v, %v", ok, err)
		}
		if err := s.PutFrame(ctx, &store.Frame{Request: "r", Frame: frame, Kind: "tool", Name: "t", State: "executing", IdemKey: key, Started: t0}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d commits for 20 claims with their checkpoints (one each when the checkpoint comes within the linger)", s.WriterStats().Batches-before)
	keys, _ := s.ClaimedKeys(ctx)
	fs, _ := s.RequestFrames(ctx, "r")
	if len(keys) != 20 || len(fs) != 20 || fs[3].IdemKey != "k3" {
		t.Fatalf("%d claims and %d checkpoints stored, want 20 and 20", len(keys), len(fs))
	}
}

// Concurrent claims of one key from two instances: one claims it, the
// other gets the claim.
func TestPostgresClaimRace(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	for round := range 20 {
		key := fmt.Sprintf("k%d", round)
		var wg sync.WaitGroup
		var claimed atomic.Int64
		for i, s := range []*Store{a, b, a, b} {
			wg.Go(func() {
				rec, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: key, Owner: fmt.Sprintf("i%d/1", i), Claimed: time.Now()})
				switch {
				case err != nil:
					t.Error(err)
				case ok:
					claimed.Add(1)
				case rec == nil || rec.State != store.IdemClaimed:
					t.Errorf("a lost claim got %+v", rec)
				}
			})
		}
		wg.Wait()
		if claimed.Load() != 1 {
			t.Fatalf("round %d: %d claims won, want 1", round, claimed.Load())
		}
	}
}

// Two audit writers on one log never fork it: appends lock the head.
func TestPostgresAuditChainedWriters(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	var wg sync.WaitGroup
	for w, s := range []*Store{a, b, a, b} {
		wg.Go(func() {
			for i := range 25 {
				recs := []*store.AuditRecord{{Time: t0, Request: fmt.Sprintf("w%d", w), Data: []byte(fmt.Sprintf(`{"i":%d}`, i))},
					{Time: t0, Request: fmt.Sprintf("w%d", w), Data: []byte(`{}`)}}
				err := s.AppendAuditChained(ctx, recs, func(seq int64, hash []byte) []store.AuditCheckpoint {
					prev := hash
					if prev == nil {
						prev = make([]byte, 32)
					}
					for _, r := range recs {
						seq++
						r.Seq, r.PrevHash, r.Hash = seq, prev, []byte(fmt.Sprintf("%032d", seq))
						prev = r.Hash
					}
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	all, err := a.ScanAudit(ctx, 0, 0)
	if err != nil || len(all) != 200 {
		t.Fatalf("%d records (%v), want 200", len(all), err)
	}
	for i, r := range all {
		if r.Seq != int64(i+1) || i > 0 && string(r.PrevHash) != string(all[i-1].Hash) {
			t.Fatalf("record %d: seq %d, prev %q after %q", i, r.Seq, r.PrevHash, all[max(i-1, 0)].Hash)
		}
	}
	// A plain append whose seq another writer took is refused whole.
	if err := b.AppendAudit(ctx, []*store.AuditRecord{{Seq: 200, Time: t0, Request: "x", Data: []byte(`{}`), Hash: []byte("h")}}, nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("AppendAudit of a taken seq = %v, want ErrConflict", err)
	}
	if _, err := a.pool.Exec(ctx, `UPDATE audit SET request = 'x' WHERE seq = 1`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("an UPDATE of the audit log = %v, want it refused as append-only", err)
	}
}

func joinReq(id, principal string) *store.Request {
	return &store.Request{ID: id, Principal: principal, Tenant: "acme", Roles: []string{"buyer"}, Trace: "0af7651916cd43dd8448eb211c80319c",
		Agent: "main", Budget: []byte(`{"tool_calls":3}`), Started: time.Now()}
}

// A request begun on one instance is joined on another, as it was begun;
// it ends when the last instance leaves it; one that ended is begun again
// by its owner with its ledger kept (what its earlier runs spent counts:
// schema 28; it used to start over).
func TestPostgresJoinAndLeave(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	ttl := time.Minute
	for _, s := range []struct {
		p     *Store
		owner string
	}{{a, "A/1"}, {b, "B/1"}} {
		if err := s.p.Heartbeat(ctx, s.owner, s.owner[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	first := joinReq("r1", "alice")
	got, outcome, err := a.JoinRequest(ctx, first, "A/1", ttl)
	if err != nil || outcome != JoinBegun {
		t.Fatalf("JoinRequest on A = %v, %v", outcome, err)
	}
	if _, ok, _ := a.Debit(ctx, "r1", store.Spend{ToolCalls: 2}, store.Spend{}); !ok {
		t.Fatal("debit refused")
	}
	late := joinReq("r1", "alice")
	late.Budget, late.Started = []byte(`{"tool_calls":99}`), time.Now().Add(time.Hour)
	got, outcome, err = b.JoinRequest(ctx, late, "B/1", ttl)
	if err != nil || outcome != JoinJoined || string(got.Budget) != `{"tool_calls":3}` || !got.Started.Equal(store.Round(first.Started)) ||
		got.Principal != "alice" || got.Tenant != "acme" || !slices.Equal(got.Roles, []string{"buyer"}) || got.Trace != first.Trace {
		t.Fatalf("JoinRequest on B = %+v, %v, %v; want A's request joined", got, outcome, err)
	}
	if last, err := a.LeaveRequest(ctx, "r1", "A/1", ttl, "ended", nil, nil, time.Now()); err != nil || last {
		t.Fatalf("A leaves = %v, %v; want not the last", last, err)
	}
	if r, _ := a.GetRequest(ctx, "r1"); r.State != "running" {
		t.Fatalf("after A left, r1 is %s, want running (B runs it)", r.State)
	}
	if last, err := b.LeaveRequest(ctx, "r1", "B/1", ttl, "ended", []byte(`{"tool_calls":2}`), nil, time.Now()); err != nil || !last {
		t.Fatalf("B leaves = %v, %v; want the last", last, err)
	}
	if r, _ := a.GetRequest(ctx, "r1"); r.State != "ended" || string(r.Usage) != `{"tool_calls":2}` || r.Ended.IsZero() {
		t.Fatalf("after both left, r1 = %+v, want ended with its usage", r)
	}
	// An ended id is not another principal's to take: bob is told whose
	// it is, and nothing is written.
	got, outcome, err = b.JoinRequest(ctx, joinReq("r1", "bob"), "B/1", ttl)
	if r, _ := a.GetRequest(ctx, "r1"); err != nil || outcome != JoinForeign || got.Principal != "alice" || r.Principal != "alice" || r.State != "ended" {
		t.Fatalf("bob naming alice's ended request = %v, %+v, %v; stored %+v; want foreign, nothing written", outcome, got, err, r)
	}
	_, outcome, err = b.JoinRequest(ctx, joinReq("r1", "alice"), "B/1", ttl)
	if sp, _ := a.Spent(ctx, "r1"); err != nil || outcome != JoinBegun || sp != (store.Spend{ToolCalls: 2}) {
		t.Fatalf("the ended request named again by its owner = %v, %v, spent %+v; want begun again, its 2 tool calls spent", outcome, err, sp)
	}
	// A request whose every instance died is not joined: it is begun
	// again only by recovery (ClaimOrphans), so here it is an orphan.
	if _, err := a.pool.Exec(ctx, `UPDATE instances SET seen = 0 WHERE owner = 'B/1'`); err != nil {
		t.Fatal(err)
	}
	judge(t, a, "B/1", ttl)
	ids, err := a.ClaimOrphans(ctx, "A/1", ttl, 10)
	if err != nil || !slices.Equal(ids, []string{"r1"}) {
		t.Fatalf("ClaimOrphans = %v, %v; want r1, whose only instance died", ids, err)
	}
	if ids, _ := b.ClaimOrphans(ctx, "B/2", ttl, 10); len(ids) != 0 {
		t.Fatalf("a second recoverer claimed %v, which A holds", ids)
	}
}

// judge judges owner dead, as a recovery does before it claims orphans.
func judge(t *testing.T, p *Store, owner string, ttl time.Duration) {
	t.Helper()
	if got, err := p.Judge(t.Context(), []string{owner}, ttl); err != nil || !slices.Equal(got, []string{owner}) {
		t.Fatalf("Judge(%s) = %v, %v", owner, got, err)
	}
}

// A recovery claims the requests of the lives it judged dead, whose
// idempotency claims it settled just before, not those of a life whose
// heartbeat aged past the TTL since its view had it alive: an undo run for
// one of those would wait out the lease of a claim the dead life holds
// (TestCrashAtEveryDurablePointOnPostgres/executing_3 waited minutes, its
// undos dead-lettered). Once judged, the life's requests are claimed.
func TestPostgresOrphansOfJudgedLivesOnly(t *testing.T) {
	a, _, _ := twoPostgres(t)
	ctx := t.Context()
	ttl := time.Minute
	for _, o := range []string{"A/1", "B/1"} {
		if err := a.Heartbeat(ctx, o, o[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if _, outcome, err := a.JoinRequest(ctx, joinReq("q1", "alice"), "B/1", ttl); err != nil || outcome != JoinBegun {
		t.Fatalf("JoinRequest on B = %v, %v", outcome, err)
	}
	if _, err := a.pool.Exec(ctx, `UPDATE instances SET seen = 0 WHERE owner = 'B/1'`); err != nil { // B fell silent
		t.Fatal(err)
	}
	if ids, err := a.ClaimOrphans(ctx, "A/1", ttl, 10); err != nil || len(ids) != 0 {
		t.Fatalf("ClaimOrphans before B was judged = %v, %v; want none", ids, err)
	}
	judge(t, a, "B/1", ttl)
	if ids, err := a.ClaimOrphans(ctx, "A/1", ttl, 10); err != nil || !slices.Equal(ids, []string{"q1"}) {
		t.Fatalf("ClaimOrphans once B was judged = %v, %v; want q1", ids, err)
	}
}

// A request whose every instance died, and that no recovery has claimed
// yet, is not begun again under its id by a call that names it: that
// began it with its ledger at zero (its budget given back by the crash)
// and made the caller's instance its live one, so that no recovery ever
// claimed it and its finished writes were never undone. The call is
// refused as interrupted, which is what the recovery makes of it; nothing
// is written.
func TestPostgresOrphanNotBegunAgain(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	ttl := time.Minute
	for _, o := range []string{"A/1", "B/1"} {
		if err := a.Heartbeat(ctx, o, o[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if _, outcome, err := a.JoinRequest(ctx, joinReq("o1", "alice"), "A/1", ttl); err != nil || outcome != JoinBegun {
		t.Fatalf("JoinRequest on A = %v, %v", outcome, err)
	}
	if _, ok, _ := a.Debit(ctx, "o1", store.Spend{ToolCalls: 2, Tokens: 500}, store.Spend{}); !ok {
		t.Fatal("debit refused")
	}
	if _, err := a.pool.Exec(ctx, `UPDATE instances SET seen = 0 WHERE owner = 'A/1'`); err != nil { // A died
		t.Fatal(err)
	}
	got, outcome, err := b.JoinRequest(ctx, joinReq("o1", "alice"), "B/1", ttl)
	if err != nil || outcome != JoinFinal || got.State != "interrupted" {
		t.Fatalf("naming the orphan o1 on B = %v, %+v, %v; want final, interrupted", outcome, got, err)
	}
	if sp, _ := b.Spent(ctx, "o1"); sp != (store.Spend{ToolCalls: 2, Tokens: 500}) {
		t.Errorf("o1 has spent %+v after B named it; want what it spent before A died", sp)
	}
	judge(t, b, "A/1", ttl)
	if ids, err := b.ClaimOrphans(ctx, "B/1", ttl, 10); err != nil || !slices.Equal(ids, []string{"o1"}) {
		t.Errorf("ClaimOrphans = %v, %v; want o1, still an orphan for the recovery", ids, err)
	}
}

// A request its client ended (SettleRequest) whose instances all died
// before they ended their parts is ended by the recovery that finds it,
// not claimed (nothing of it is undone); one begun again under its id
// after it ended is claimed as any other orphan.
func TestPostgresSettledOrphan(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	ttl := time.Minute
	for _, o := range []string{"A/1", "B/1"} {
		if err := a.Heartbeat(ctx, o, o[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"s1", "s2"} {
		if _, outcome, err := b.JoinRequest(ctx, joinReq(id, "alice"), "B/1", ttl); err != nil || outcome != JoinBegun {
			t.Fatalf("JoinRequest %s = %v, %v", id, outcome, err)
		}
	}
	if found, err := a.SettleRequest(ctx, "s1"); err != nil || !found {
		t.Fatalf("SettleRequest(s1) = %v, %v", found, err)
	}
	if found, err := a.SettleRequest(ctx, "nope"); err != nil || found {
		t.Fatalf("SettleRequest(nope) = %v, %v; want not found", found, err)
	}
	// What B, had it missed the wake-up, reads as it listens again.
	if ids, err := b.Settled(ctx, "B/1"); err != nil || !slices.Equal(ids, []string{"s1"}) {
		t.Fatalf("Settled(B/1) = %v, %v; want s1 (its client ended it, s2 runs on)", ids, err)
	}
	if ids, err := b.Settled(ctx, "A/1"); err != nil || len(ids) != 0 {
		t.Fatalf("Settled(A/1) = %v, %v; want none (A runs no part of s1)", ids, err)
	}
	if _, err := a.pool.Exec(ctx, `UPDATE instances SET seen = 0 WHERE owner = 'B/1'`); err != nil {
		t.Fatal(err)
	}
	judge(t, a, "B/1", ttl)
	ids, err := a.ClaimOrphans(ctx, "A/1", ttl, 10)
	if err != nil || !slices.Equal(ids, []string{"s2"}) {
		t.Fatalf("ClaimOrphans = %v, %v; want s2 only (its client ended s1)", ids, err)
	}
	if r, _ := a.GetRequest(ctx, "s1"); r.State != "ended" || r.Ended.IsZero() {
		t.Fatalf("s1 = %s (ended %v), want ended by the recovery", r.State, r.Ended)
	}
	// s1 begun again under its id: not settled by its earlier end.
	if _, outcome, err := b.JoinRequest(ctx, joinReq("s1", "alice"), "B/2", ttl); err != nil || outcome != JoinBegun {
		t.Fatalf("JoinRequest s1 again = %v, %v", outcome, err)
	}
	if ids, err := b.Settled(ctx, "B/2"); err != nil || len(ids) != 0 {
		t.Fatalf("Settled(B/2) = %v, %v; want none (s1 begun again was not ended by its client)", ids, err)
	}
	ids, err = a.ClaimOrphans(ctx, "A/1", ttl, 10)
	if err != nil || !slices.Equal(ids, []string{"s1"}) {
		t.Fatalf("ClaimOrphans = %v, %v; want s1 begun again, whose instance is dead", ids, err)
	}
}

// A stop is durable and monotonic; it wakes every instance that watches,
// and an instance that reconnects reads what it missed; every admission
// after it refuses the request's steps.
func TestPostgresStopAndAdmit(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	for _, s := range []*Store{a, b} {
		if _, _, err := s.JoinRequest(ctx, joinReq("r2", "alice"), "A/1", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan Signal, 10)
	connected := make(chan struct{}, 10)
	if err := b.Watch(func(s Signal) { got <- s }, func(context.Context) { connected <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-connected:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener did not connect")
	}
	caps := []store.Spend{{ToolCalls: 3}}
	for i := range 4 {
		s := a
		if i%2 == 1 {
			s = b
		}
		adm, err := s.Admit(ctx, []string{"r2"}, store.Spend{ToolCalls: 1}, caps)
		if err != nil {
			t.Fatal(err)
		}
		if want := i < 3; adm.OK != want || !adm.OK && (adm.Dim != "tool_calls" || adm.Over != 0 || adm.Spent.ToolCalls != 3) {
			t.Fatalf("admission %d = %+v, want ok %v", i, adm, want)
		}
	}
	cause := []byte(`{"mode":"cancel","by":"op","reason":"enough"}`)
	if changed, err := a.StopRequest(ctx, "r2", 2, cause); err != nil || !changed {
		t.Fatalf("StopRequest = %v, %v", changed, err)
	}
	if changed, _ := a.StopRequest(ctx, "r2", 1, []byte(`{}`)); changed {
		t.Fatal("a weaker stop changed the stored one")
	}
	select {
	case s := <-got:
		if s != (Signal{Kind: "stop", ID: "r2"}) {
			t.Fatalf("signal %+v", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no stop signal")
	}
	adm, err := b.Admit(ctx, []string{"sub", "r2"}, store.Spend{ToolCalls: 1}, []store.Spend{{}, {}})
	if err != nil || adm.OK || adm.Stopped != "r2" || string(adm.Cause) != string(cause) || adm.State != "stopped" {
		t.Fatalf("an admission after the stop = %+v, %v; want refused, naming r2 and its cause", adm, err)
	}
	if _, outcome, _ := b.JoinRequest(ctx, joinReq("r2", "alice"), "B/1", time.Minute); outcome != JoinFinal {
		t.Fatalf("joining a stopped request = %v, want final", outcome)
	}
	stops, err := b.Stops(ctx, time.Now().Add(-time.Minute))
	if err != nil || len(stops) != 1 || stops[0].Request != "r2" || stops[0].Mode != 2 {
		t.Fatalf("Stops = %+v, %v", stops, err)
	}
	// Cut off and back: the listener connects again by itself.
	if _, err := a.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-connected:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener did not connect again")
	}
	if _, err := a.StopRequest(ctx, "r2", 3, cause); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s.ID != "r2" {
			t.Fatalf("signal %+v", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no stop signal after the listener connected again")
	}
}

// A restarted server fails the writes in flight with errors, not hangs;
// the pool connects again and the store goes on.
func TestPostgresServerRestart(t *testing.T) {
	s := openPostgres(t, pgtest.Database(t))
	ctx := t.Context()
	if err := s.PutRequest(ctx, &store.Request{ID: "before", State: "running", Started: t0}); err != nil {
		t.Fatal(err)
	}
	if err := pgtest.Shared(t).Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err = s.PutRequest(wctx, &store.Request{ID: "after", State: "running", Started: t0})
		cancel()
		if err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the store did not go on after the restart: %v", err)
	}
	for _, id := range []string{"before", "after"} {
		if _, err := s.GetRequest(ctx, id); err != nil {
			t.Errorf("GetRequest(%s) after the restart: %v", id, err)
		}
	}
}

// FindFrame finds a checkpoint by its frame id in any request, with its
// stack; OpenFramesOf finds the open ones a life wrote.
func TestPostgresFindFrame(t *testing.T) {
	s := openPostgres(t, pgtest.Database(t))
	ctx := t.Context()
	stack, _ := json.Marshal([]map[string]string{{"id": "00000000000000aa"}})
	for _, f := range []*store.Frame{
		{Request: "r", Frame: "00000000000000bb", Kind: "tool", Name: "x", State: "executing", Owner: "A/1", Stack: stack, Started: t0},
		{Request: "r", Frame: "00000000000000cc", Kind: "tool", Name: "y", State: "completed", Owner: "A/1", Started: t0},
		{Request: "q", Frame: "00000000000000dd", Kind: "tool", Name: "z", State: "executing", Owner: "B/1", Started: t0},
	} {
		if err := s.PutFrame(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	f, err := s.FindFrame(ctx, "00000000000000bb")
	if err != nil || f.Request != "r" || string(f.Stack) != string(stack) || f.Owner != "A/1" {
		t.Fatalf("FindFrame = %+v, %v", f, err)
	}
	if _, err := s.FindFrame(ctx, "00000000000000ee"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("FindFrame(missing) = %v", err)
	}
	open, err := s.OpenFramesOf(ctx, []string{"A/1"})
	if err != nil || len(open) != 1 || open[0].Frame != "00000000000000bb" {
		t.Fatalf("OpenFramesOf(A/1) = %v, %v", frameIDs(open), err)
	}
	// A checkpoint's end keeps its stack.
	end := *f
	end.State, end.Stack = "completed", nil
	s.PutFrame(ctx, &end)
	if f, _ := s.FindFrame(ctx, "00000000000000bb"); string(f.Stack) != string(stack) {
		t.Fatalf("the end of the checkpoint lost its stack: %q", f.Stack)
	}
}

// The end of an MCP session's record, by its DELETE or its idle gap,
// wakes every instance that watches, naming its hash, so that one holding
// the session in memory ends it too; a delete of no record wakes nobody,
// and the sweep still counts what it deleted.
func TestPostgresSessionEndWakes(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	got := make(chan Signal, 10)
	connected := make(chan struct{}, 10)
	if err := b.Watch(func(s Signal) { got <- s }, func(context.Context) { connected <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-connected:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener did not connect")
	}
	for _, h := range []string{"h-deleted", "h-idle"} {
		if err := a.StoreSession(ctx, &store.SessionRecord{Hash: h, Init: []byte(`{}`), Created: t0, Used: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.DeleteSession(ctx, "h-none"); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteSession(ctx, "h-deleted"); err != nil {
		t.Fatal(err)
	}
	if n, err := a.SweepSessions(ctx, t0.Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("SweepSessions = %d, %v; want 1", n, err)
	}
	var seen []Signal
	for _, want := range []Signal{{Kind: "session", ID: "h-deleted"}, {Kind: "idle", ID: "h-idle"}} {
		select {
		case s := <-got:
			seen = append(seen, s)
			if s != want {
				t.Fatalf("signals %+v, want %+v next", seen, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("signals %+v, then none; want %+v", seen, want)
		}
	}
}

// A process killed a moment ago holds its instance's name until the server
// has ended its backend: a restart under the same name asks again for a
// while instead of being refused at once. (The holder here is a bare
// connection that takes the lock and lets it go a little later.)
func TestPostgresHoldInstanceWaitsForAKilledHolder(t *testing.T) {
	url := pgtest.Database(t)
	held, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	var ok bool
	if err := held.QueryRow(t.Context(), `SELECT pg_try_advisory_lock(hashtextextended('reach instance ' || $1, 0))`, "a").Scan(&ok); err != nil || !ok {
		t.Fatalf("taking the name's lock: %v, %v", ok, err)
	}
	s := openPostgres(t, url)
	go func() {
		time.Sleep(300 * time.Millisecond)
		held.Close(context.Background())
	}()
	if err := s.HoldInstance(t.Context(), "a"); err != nil {
		t.Fatalf("HoldInstance after the holder went: %v; want the name taken", err)
	}
}

// A live holder keeps its name: another process asking for it is refused
// once its ConnectTimeout has passed. (The timeout also bounds b's own
// connecting: 2s, not less, so a loaded machine under -race connects.)
func TestPostgresHoldInstanceRefusesALiveHolder(t *testing.T) {
	url := pgtest.Database(t)
	a := openPostgres(t, url)
	if err := a.HoldInstance(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	b, err := Open(t.Context(), url, &Options{ConnectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.HoldInstance(t.Context(), "a"); !errors.Is(err, ErrInstanceRunning) {
		t.Fatalf("HoldInstance of a name held = %v; want ErrInstanceRunning", err)
	}
	if err := b.HoldInstance(t.Context(), "b"); err != nil {
		t.Fatalf("HoldInstance of another name = %v", err)
	}
}

// RunningOn names, of the requests asked for, those stored running with a
// part on another instance than the asker's life, with those instances;
// not one the asker alone runs, nor one ended or stopped.
func TestPostgresRunningOn(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	ttl := time.Minute
	for _, s := range []struct {
		p     *Store
		owner string
	}{{a, "A/1"}, {b, "B/1"}} {
		if err := s.p.Heartbeat(ctx, s.owner, s.owner[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"r1", "r2", "r3"} {
		if _, outcome, err := a.JoinRequest(ctx, joinReq(id, "alice"), "A/1", ttl); err != nil || outcome != JoinBegun {
			t.Fatalf("JoinRequest %s on A = %v, %v", id, outcome, err)
		}
	}
	for _, id := range []string{"r1", "r3"} {
		if _, outcome, err := b.JoinRequest(ctx, joinReq(id, "alice"), "B/1", ttl); err != nil || outcome != JoinJoined {
			t.Fatalf("JoinRequest %s on B = %v, %v", id, outcome, err)
		}
	}
	// B's part of r1 and r3 ends; A's runs on. r3 is then stopped.
	for _, id := range []string{"r1", "r3"} {
		if last, err := b.LeaveRequest(ctx, id, "B/1", ttl, "ended", nil, nil, time.Now()); err != nil || last {
			t.Fatalf("B leaves %s = %v, %v; want not the last", id, last, err)
		}
	}
	if _, err := a.pool.Exec(ctx, `UPDATE requests SET stop = 2, state = 'stopped' WHERE id = 'r3'`); err != nil {
		t.Fatal(err)
	}
	got, err := b.RunningOn(ctx, []string{"r1", "r2", "r3", "r4"}, "B/1")
	if err != nil || len(got) != 2 || !slices.Equal(got["r1"], []string{"A"}) || !slices.Equal(got["r2"], []string{"A"}) {
		t.Fatalf("RunningOn from B = %v, %v; want r1 and r2 on A (r3 stopped, r4 unknown)", got, err)
	}
	many := []string{"r1", "r3"}
	for i := range 20 {
		many = append(many, fmt.Sprint("x", i))
	}
	if got, err := b.RunningOn(ctx, many, "B/1"); err != nil || len(got) != 1 || !slices.Equal(got["r1"], []string{"A"}) {
		t.Fatalf("RunningOn from B of 22 ids = %v, %v; want r1 on A (not r2, not asked)", got, err)
	}
	if got, err := a.RunningOn(ctx, []string{"r1", "r2"}, "A/1"); err != nil || len(got) != 0 {
		t.Fatalf("RunningOn from A = %v, %v; want none: A alone runs them", got, err)
	}
	if last, err := a.LeaveRequest(ctx, "r1", "A/1", ttl, "ended", nil, nil, time.Now()); err != nil || !last {
		t.Fatalf("A leaves r1 = %v, %v; want the last", last, err)
	}
	if got, err := b.RunningOn(ctx, []string{"r1"}, "B/1"); err != nil || len(got) != 0 {
		t.Fatalf("RunningOn r1 after it ended = %v, %v; want none", got, err)
	}
}

// A checkpoint keeps the keys of the entities its call writes (schema
// 23): OpenFramesOf reads them back for the recovery, a checkpoint put
// again without them (its end) keeps them, and one written with none
// (an older instance's) reads back with none.
func TestPostgresFrameEntityKeys(t *testing.T) {
	s := openPostgres(t, pgtest.Database(t))
	ctx := t.Context()
	keys := []string{"sha256:" + strings.Repeat("ab", 32), "item:7"}
	for _, f := range []*store.Frame{
		{Request: "r", Frame: "00000000000000bb", Kind: "tool", Name: "put", State: "executing", Owner: "A/1", Entities: keys, Started: t0},
		{Request: "r", Frame: "00000000000000cc", Kind: "tool", Name: "put", State: "executing", Owner: "A/1", Started: t0},
	} {
		if err := s.PutFrame(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	open, err := s.OpenFramesOf(ctx, []string{"A/1"})
	if err != nil || len(open) != 2 {
		t.Fatalf("OpenFramesOf(A/1) = %v, %v", frameIDs(open), err)
	}
	for _, f := range open {
		want := keys
		if f.Frame == "00000000000000cc" {
			want = nil
		}
		if !slices.Equal(f.Entities, want) {
			t.Errorf("checkpoint %s reads back the entity keys %q; want %q", f.Frame, f.Entities, want)
		}
	}
	end := store.Frame{Request: "r", Frame: "00000000000000bb", Kind: "tool", Name: "put", State: "cancelled", Owner: "A/1", Started: t0}
	if err := s.PutFrame(ctx, &end); err != nil {
		t.Fatal(err)
	}
	if f, err := s.FindFrame(ctx, end.Frame); err != nil || f.State != "cancelled" || !slices.Equal(f.Entities, keys) {
		t.Fatalf("the end of the checkpoint lost its entity keys: %+v, %v", f, err)
	}
}
