package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

func TestSQLiteSettings(t *testing.T) {
	tests := []struct {
		opts     *Options
		sync     int // PRAGMA synchronous: 1 NORMAL, 2 FULL
		file     string
		busy     int
		wantFail string
	}{
		{opts: nil, sync: 1, file: DefaultFile, busy: 5000},
		{opts: &Options{Synchronous: "full", File: "x.db", BusyTimeout: 1500e6}, sync: 2, file: "x.db", busy: 1500},
		{opts: &Options{Synchronous: "OFF"}, wantFail: "synchronous must be NORMAL or FULL"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		s, err := Open(t.Context(), dir, tt.opts)
		if tt.wantFail != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantFail) {
				t.Errorf("Open(%+v) = %v, want an error containing %q", tt.opts, err, tt.wantFail)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if s.Path() != filepath.Join(dir, tt.file) {
			t.Errorf("Path() = %s, want %s", s.Path(), filepath.Join(dir, tt.file))
		}
		var mode string
		var sync, busy int
		for _, db := range []querier{s.wc, s.r} {
			if err := db.QueryRowContext(t.Context(), `PRAGMA journal_mode`).Scan(&mode); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRowContext(t.Context(), `PRAGMA synchronous`).Scan(&sync); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRowContext(t.Context(), `PRAGMA busy_timeout`).Scan(&busy); err != nil {
				t.Fatal(err)
			}
			if mode != "wal" || sync != tt.sync || busy != tt.busy {
				t.Errorf("Open(%+v): journal_mode %s, synchronous %d, busy_timeout %d; want wal, %d, %d",
					tt.opts, mode, sync, busy, tt.sync, tt.busy)
			}
		}
		if n := s.w.Stats().MaxOpenConnections; n != 1 {
			t.Errorf("writer pool allows %d connections, want 1", n)
		}
		s.Close()
	}
}

func TestSQLiteMigrations(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s := openSQLite(t, dir, nil)
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	latest := migrations[len(migrations)-1].version
	if v != latest {
		t.Fatalf("SchemaVersion = %d, want %d", v, latest)
	}
	var names []string
	rows, err := s.r.Query(`SELECT version || ' ' || name FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	if len(names) != len(migrations) || names[0] != "1 initial schema" {
		t.Errorf("schema_migrations = %q", names)
	}
	s.Close()

	// Reopening applies nothing twice.
	s = openSQLite(t, dir, nil)
	var n int
	s.r.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n)
	if n != len(migrations) {
		t.Errorf("after reopening, %d migration rows, want %d", n, len(migrations))
	}
	// A database from a newer binary is refused.
	if _, err := s.wc.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied) VALUES (?, 'future', 0)`, latest+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, dir, nil); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Errorf("Open of a newer schema = %v, want a refusal", err)
	}
}

func TestSQLiteNoCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	if _, err := Open(t.Context(), dir, &Options{NoCreate: true}); err == nil {
		t.Fatal("Open with NoCreate of a missing database succeeded")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Open with NoCreate created %s", dir)
	}
}

func TestSQLiteAuditAppendOnly(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	if err := s.AppendAudit(t.Context(), []*store.AuditRecord{auditRecord(1, "r")}, nil); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`UPDATE audit SET request = 'x'`, `DELETE FROM audit`} {
		if _, err := s.wc.ExecContext(t.Context(), q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the append-only trigger to refuse", q, err)
		}
	}
}

// A second process (here: a second store on the same file) sees committed
// writes, and a row taken by one writer is a conflict for the other.
func TestSQLiteTwoStores(t *testing.T) {
	dir := t.TempDir()
	a := openSQLite(t, dir, nil)
	b := openSQLite(t, dir, nil)
	ctx := context.Background()
	if err := a.AppendAudit(ctx, []*store.AuditRecord{auditRecord(1, "r")}, nil); err != nil {
		t.Fatal(err)
	}
	if seq, _, err := b.AuditHead(ctx); err != nil || seq != 1 {
		t.Fatalf("b sees head %d, %v; want 1", seq, err)
	}
	if err := b.AppendAudit(ctx, []*store.AuditRecord{auditRecord(1, "r")}, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("b appending seq 1 again = %v, want a conflict", err)
	}
}

// The index pass reads the records back from the database when it did not
// append them itself (after a restart).
func TestSQLiteIndexAfterReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	want := map[string][]int64{}
	seq := int64(0)
	appendN := func(s *Store, n int) {
		for range n / 100 {
			var batch []*store.AuditRecord
			for range 100 {
				seq++
				req := fmt.Sprintf("r%d", seq%13)
				want[req] = append(want[req], seq)
				batch = append(batch, auditRecord(seq, req))
			}
			if err := s.AppendAudit(ctx, batch, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := openSQLite(t, dir, nil)
	appendN(s, 5000)
	s.Close()
	s = openSQLite(t, dir, nil)
	if s.indexed.Load() != 4100 {
		t.Fatalf("after reopening, indexed up to %d, want 4100", s.indexed.Load())
	}
	appendN(s, 5000)
	if got := s.indexed.Load(); got != 8200 {
		t.Fatalf("indexed up to %d, want 8200", got)
	}
	for req, seqs := range want {
		recs, err := s.RequestAudit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(seqs) || recs[0].Seq != seqs[0] || recs[len(recs)-1].Seq != seqs[len(seqs)-1] {
			t.Errorf("RequestAudit(%s): %d records, want %d", req, len(recs), len(seqs))
		}
	}
}

func TestSQLiteSchemaVersionClosed(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	s.Close()
	if _, err := s.SchemaVersion(t.Context()); !errors.Is(err, store.ErrClosed) {
		t.Errorf("SchemaVersion after Close = %v, want ErrClosed", err)
	}
}

// TestSQLiteMigratesRequestIdentity: a database of schema 1 (requests
// without tenant, roles, attributes and trace) is migrated when a newer
// binary opens it: its requests read with those empty, and new requests
// keep them.
func TestSQLiteMigratesRequestIdentity(t *testing.T) {
	dir := t.TempDir()
	all := migrations
	w := oldDatabase(t, dir, 1)
	if _, err := w.Exec(`INSERT INTO requests (id, principal, agent, state, started, updated) VALUES ('old', 'alice', 'main', 'running', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	w.Close()
	s := openSQLite(t, dir, nil)
	if v, err := s.SchemaVersion(t.Context()); err != nil || v != all[len(all)-1].version {
		t.Fatalf("SchemaVersion after reopening = %d, %v; want %d", v, err, all[len(all)-1].version)
	}
	old, err := s.GetRequest(t.Context(), "old")
	if err != nil || old.Principal != "alice" || old.Tenant != "" || old.Roles != nil || old.Attrs != nil || old.Trace != "" {
		t.Fatalf("the request of schema 1 reads as %+v (%v)", old, err)
	}
	r := &store.Request{ID: "new", Principal: "bob", Tenant: "globex", Roles: []string{"operator"}, Attrs: map[string]string{"team": "ops"},
		Trace: "0af7651916cd43dd8448eb211c80319c", State: "running", Started: t0}
	if err := s.PutRequest(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRequest(t.Context(), "new")
	if err != nil || got.Tenant != "globex" || fmt.Sprint(got.Roles) != "[operator]" || got.Attrs["team"] != "ops" || got.Trace != r.Trace {
		t.Errorf("a new request reads as %+v (%v)", got, err)
	}
}

// TestSQLiteSubRequestsUseTheirIndex: listing a request's sub-requests
// searches the requests_parent index rather than scanning every request.
func TestSQLiteSubRequestsUseTheirIndex(t *testing.T) {
	s := openSQLite(t, t.TempDir(), nil)
	q, args := sqlcore.RequestsQuery(store.RequestFilter{Parent: "r1"})
	if plan := queryPlan(t, s.r, q, args...); !strings.Contains(plan, "requests_parent") {
		t.Errorf("the query plan is %q, want it to use requests_parent", plan)
	}
}

// queryPlan is SQLite's plan of q on db, its steps joined by "; ".
func queryPlan(t *testing.T, db querier, q string, args ...any) string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var detail []string
	for rows.Next() {
		var id, parent, notused int
		var d string
		if err := rows.Scan(&id, &parent, &notused, &d); err != nil {
			t.Fatal(err)
		}
		detail = append(detail, d)
	}
	return strings.Join(detail, "; ")
}

// TestSQLiteMigratesIdemClaims: a database of schema 2 (claims without
// arguments or checkpoint) is migrated when a newer binary opens it: its
// claims read with those empty, so that recovery settles them as calls that
// may have run, and they are listed without a scan of every record.
func TestSQLiteMigratesIdemClaims(t *testing.T) {
	dir := t.TempDir()
	w := oldDatabase(t, dir, 2)
	if _, err := w.Exec(`INSERT INTO idempotency (key, owner, state, claimed, expires) VALUES ('pay:r1/c1', 'idem-0011223344556677', 'claimed', 5, 0)`); err != nil {
		t.Fatal(err)
	}
	w.Close()
	s := openSQLite(t, dir, nil)
	claims, err := s.ClaimedKeys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []*store.IdemRecord{{Key: "pay:r1/c1", Owner: "idem-0011223344556677", State: store.IdemClaimed, Claimed: time.Unix(0, 5)}}
	if diff := cmp.Diff(want, claims); diff != "" {
		t.Errorf("the claim of schema 2 reads as (-want +got):\n%s", diff)
	}
	// Listed without reading every record: those above the claims' mark
	// and the held ones, by their rowid.
	noScan(t, s, `SELECT key FROM idempotency WHERE `+dialect.Claims+` ORDER BY claimed, key`, "idempotency")
}

// oldDatabase makes in dir the database of a binary that knew only the
// first n migrations, and returns a connection to it.
func oldDatabase(t *testing.T, dir string, n int) *sql.DB {
	t.Helper()
	w, err := OpenFile(filepath.Join(dir, DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	w.SetMaxOpenConns(1)
	all := migrations
	migrations = all[:n]
	defer func() { migrations = all }()
	if err := (&Store{w: w, Core: &sqlcore.Core{}}).migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return w
}

// querier is a pool (*sql.DB) or the writer's connection (*sql.Conn).
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// TestSQLiteMigratesIdemRecordsToRowid: a store of schema 6 (idempotency
// records keyed by their key, WITHOUT ROWID) holding what a crash leaves
// (a call claimed and executing, a claim whose checkpoint never came, a
// call completed whose result was not recorded) and a recorded result is
// migrated when a newer binary opens it; recovery then settles each claim
// by its checkpoint, the crash-left call's checkpoint is found open, the
// recorded result still answers its key, and a new claim works.
func TestSQLiteMigratesIdemRecordsToRowid(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := oldDatabase(t, dir, 6)
	writeCrashLeft(t, w)
	w.Close()

	s := openSQLite(t, dir, nil)
	if v, err := s.SchemaVersion(ctx); err != nil || v < 7 {
		t.Fatalf("SchemaVersion = %d, %v; want 7 or later", v, err)
	}
	var ddl string
	if err := s.r.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'idempotency'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToUpper(ddl), "WITHOUT ROWID") {
		t.Errorf("the migrated idempotency table is still WITHOUT ROWID:\n%s", ddl)
	}
	claims, err := s.ClaimedKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range claims {
		keys = append(keys, c.Key+" "+c.Request+"/"+c.Frame+" "+c.Args)
	}
	if diff := cmp.Diff([]string{"k-01 r1/01 d-k-01", "k-02 r1/02 d-k-02", "k-03 r1/03 d-k-03"}, keys); diff != "" {
		t.Errorf("ClaimedKeys after the migration (-want +got):\n%s", diff)
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
	var outcomes []string // settled in the order they were claimed
	for _, st := range settled {
		outcomes = append(outcomes, st.Claim.Key+" "+st.Outcome)
	}
	want := []string{"k-01 " + store.SettledInterrupted, "k-02 " + store.SettledReleased, "k-03 " + store.SettledResultLost}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("recovery settled (-want +got):\n%s", diff)
	}
	if claims, err := s.ClaimedKeys(ctx); err != nil || len(claims) != 0 {
		t.Errorf("ClaimedKeys after recovery = %d claims, %v; want none", len(claims), err)
	}

	// What each key answers now: a new claim of each, by this life.
	now := time.Now()
	for _, tt := range []struct {
		key, state, code string
		claimed          bool
	}{
		{"k-01", store.IdemDone, "interrupted", false},
		{"k-02", store.IdemClaimed, "", true},
		{"k-03", store.IdemDone, "result_lost", false},
		{"k-04", store.IdemDone, "", false},
		{"k-05", store.IdemClaimed, "", true},
	} {
		rec, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: tt.key, Owner: idem.Owner(), Args: "d-" + tt.key, Request: "r2",
			Claimed: now, Expires: now.Add(time.Hour)})
		if err != nil {
			t.Fatalf("ClaimKey(%s): %v", tt.key, err)
		}
		if ok != tt.claimed {
			t.Errorf("ClaimKey(%s) claimed = %v, want %v", tt.key, ok, tt.claimed)
			continue
		}
		if ok {
			continue
		}
		var res struct {
			Data  string `json:"data"`
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Result, &res); err != nil {
			t.Fatalf("ClaimKey(%s): the result %q: %v", tt.key, rec.Result, err)
		}
		code := ""
		if res.Error != nil {
			code = res.Error.Code
		}
		if rec.State != tt.state || code != tt.code {
			t.Errorf("ClaimKey(%s) = %s, error %q; want %s, error %q", tt.key, rec.State, code, tt.state, tt.code)
		}
		if tt.key == "k-04" && res.Data != "R-4" {
			t.Errorf("ClaimKey(k-04) answers %q, want the recorded result", rec.Result)
		}
	}
	// The claims this life took are listed in the order they were claimed.
	claims, err = s.ClaimedKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 2 || claims[0].Key != "k-02" || claims[1].Key != "k-05" {
		t.Errorf("ClaimedKeys = %d claims (%v), want k-02, k-05", len(claims), err)
	}
}

// writeCrashLeft writes into w, a database of an older schema, what a
// crash leaves of request r1 of the life dead: a call claimed and
// executing (k-01), a claim whose checkpoint never came (k-02), a call
// completed whose result was not recorded (k-03), and a recorded result
// (k-04). It returns when they were claimed (t0), the dead life and the
// recorded result.
func writeCrashLeft(t *testing.T, w *sql.DB) (t0 int64, dead string, recorded []byte) {
	t.Helper()
	t0 = time.Now().Add(-time.Minute).UnixNano()
	dead = "reach/0011223344556677" // a life of this instance that crashed
	recorded = []byte(`{"status":"success","data":"R-4"}`)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := w.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(key, frame, state string, result []byte, expires int64) {
		exec(`INSERT INTO idempotency (key, owner, state, args, request, frame, result, claimed, expires) VALUES (?, ?, ?, ?, 'r1', ?, ?, ?, ?)`,
			key, dead, state, "d-"+key, frame, result, t0, expires)
	}
	frame := func(id, state string) {
		exec(`INSERT INTO frames (request, frame, kind, name, idem_key, state, args, started, updated) VALUES ('r1', ?, 'tool', 'pay', ?, ?, '{"amount":1}', ?, ?)`,
			id, "k-"+id, state, t0, t0)
	}
	claim("k-01", "01", store.IdemClaimed, nil, t0+int64(time.Hour)) // ran when the crash came
	frame("01", "executing")
	claim("k-02", "02", store.IdemClaimed, nil, t0+int64(time.Hour)) // its checkpoint never came
	claim("k-03", "03", store.IdemClaimed, nil, t0+int64(time.Hour)) // completed, its result not recorded
	frame("03", "completed")
	claim("k-04", "04", store.IdemDone, recorded, time.Now().Add(time.Hour).UnixNano())
	frame("04", "completed")
	return t0, dead, recorded
}
