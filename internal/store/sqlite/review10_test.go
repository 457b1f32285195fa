package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

type review10Text string

type review10Valuer struct{ v string }

func (v review10Valuer) Value() (driver.Value, error) { return "valued " + v.v, nil }

// TestWriterArgumentsAsDatabaseSQL writes each kind of argument through
// the writer's own conversion (exec, on the driver's statement) and
// through database/sql on the same connection, and checks that the
// database holds the same value, of the same type, for both (or that both
// refuse it).
func TestWriterArgumentsAsDatabaseSQL(t *testing.T) {
	s, err := Open(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	str := "pointed"
	var nilStr *string
	when := time.Date(2026, 12, 2, 15, 4, 5, 6, time.FixedZone("x", 3600))
	kinds := []any{
		nil, "", "text", []byte(nil), []byte{}, []byte("bytes"),
		json.RawMessage(nil), json.RawMessage(`{}`), review10Text("named"),
		int(-3), int32(7), uint8(8), uint64(9), uint64(1 << 63), int64(-1), float32(1.5), 2.5, true, false,
		when, &str, nilStr, sql.NullString{}, sql.NullString{String: "ns", Valid: true},
		sql.NullInt64{Int64: 4, Valid: true}, review10Valuer{"v"}, &review10Valuer{"p"},
		sql.NullTime{Time: when, Valid: true}, struct{}{},
	}
	q := statementSQL[stAuditCheckpoint]
	read := func(seq int64) string {
		var typ, val string
		if err := s.wc.QueryRowContext(t.Context(), `SELECT typeof(hash), quote(hash) FROM checkpoints WHERE seq = ?`, seq).Scan(&typ, &val); err != nil {
			return "no row: " + err.Error()
		}
		return typ + " " + val
	}
	b := &batch{s: s}
	for i, v := range kinds {
		seq := int64(i + 1)
		_, werr := b.affected(stAuditCheckpoint, seq, v, int64(0))
		_, serr := s.wc.ExecContext(t.Context(), q, seq+1000, v, int64(0))
		if (werr == nil) != (serr == nil) {
			t.Errorf("%T %#v: the writer's error %v, database/sql's %v", v, v, werr, serr)
			continue
		}
		if werr != nil {
			continue
		}
		if got, want := read(seq), read(seq+1000); got != want {
			t.Errorf("%T %#v: the writer wrote %s, database/sql %s", v, v, got, want)
		}
	}
}

// TestParamsAsDriver checks that numParams counts the parameters the
// driver finds in each statement of the writer.
func TestParamsAsDriver(t *testing.T) {
	s, err := Open(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, q := range statementSQL {
		if q == "" {
			continue
		}
		if n := s.raw[id].NumInput(); n >= 0 && n != s.nparams[id] {
			t.Errorf("statement %d: %d parameters counted, the driver has %d: %s", id, s.nparams[id], n, q)
		}
	}
	_ = fmt.Sprint
}

// TestExecKeepsNoArgument checks that the writer's argument buffer holds
// no argument once a statement returns, even one whose arguments could
// not all be converted (an audit record's data is bound without a copy:
// kept, it would keep the caller's buffer alive until overwritten).
func TestExecKeepsNoArgument(t *testing.T) {
	s, err := Open(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := &batch{s: s}
	if _, err := b.affected(sqlcore.StIdemRelease, "key", "owner"); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1<<20)
	if _, err := b.affected(stAuditCheckpoint, int64(1), data, uint64(1<<63)); err == nil {
		t.Fatal("a uint64 with its high bit set was bound")
	}
	for i, v := range s.nv[:cap(s.nv)] {
		if v != (driver.NamedValue{}) {
			t.Errorf("argument %d of a statement that returned is still held: %T", i+1, v.Value)
		}
	}
}

// checkedCtx is a context that says when its Err was first read (once
// read).
type checkedCtx struct {
	context.Context
	checked chan struct{}
	once    sync.Once
}

func (c *checkedCtx) Err() error {
	err := c.Context.Err() // read before it is said to be: the end comes after
	c.once.Do(func() { close(c.checked) })
	return err
}

// TestClaimOutcomeAfterCancel checks ClaimKey's promise: once a claim with
// its "executing" checkpoint is sent, a caller whose context ends still
// waits for its outcome, and learns that it took the key (a claim taken
// but not known of would hold the key with no call to end it).
func TestClaimOutcomeAfterCancel(t *testing.T) {
	s, err := Open(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The writer is held in a batch until the claim is sent and its
	// caller's context ended.
	started, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- s.W.Do(context.Background(), &sqlcore.Write{Run: func(sqlcore.Batch, *sqlcore.Write) {
			close(started)
			<-release
		}})
	}()
	<-started
	inner, cancel := context.WithCancel(t.Context())
	ctx := &checkedCtx{Context: inner, checked: make(chan struct{})}
	now := time.Now()
	type outcome struct {
		claimed bool
		err     error
	}
	out := make(chan outcome, 1)
	go func() {
		_, claimed, err := s.ClaimKey(ctx, &store.IdemRecord{Key: "k", Owner: "o", Request: "r", Frame: "f", Claimed: now,
			Expires: now.Add(time.Hour), Executing: &store.Frame{Request: "r", Frame: "f", Kind: "tool", Name: "pay", State: "executing", Started: now}})
		out <- outcome{claimed, err}
	}()
	<-ctx.checked // the claim is past its context's check: it is being sent
	cancel()
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if o := <-out; o.err != nil || !o.claimed {
		t.Errorf("the claim = %v, %v; want taken, as it was", o.claimed, o.err)
	}
}

// TestWriterAfterBusy checks that a write refused because another process
// holds the database's write lock (SQLITE_BUSY once the busy timeout has
// passed) fails alone: the writer's next write, once the lock is let go,
// commits, on statements and a connection left as they were.
func TestWriterAfterBusy(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(t.Context(), dir, &Options{BusyTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := openPool(filepath.Join(dir, DefaultFile), false)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	oc, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	if _, err := oc.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claim := func(key string) (bool, error) {
		_, claimed, err := s.ClaimKey(t.Context(), &store.IdemRecord{Key: key, Owner: "o", Request: "r", Frame: key, Claimed: now,
			Expires: now.Add(time.Hour), Executing: &store.Frame{Request: "r", Frame: key, Kind: "tool", Name: "pay", State: "executing", Started: now}})
		return claimed, err
	}
	if claimed, err := claim("busy"); err == nil {
		t.Fatalf("a claim committed (%v) while another process held the write lock", claimed)
	}
	if _, err := oc.ExecContext(t.Context(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"after", "busy"} {
		if claimed, err := claim(key); err != nil || !claimed {
			t.Errorf("claim %q after the lock was let go = %v, %v; want taken", key, claimed, err)
		}
	}
	if fs, err := s.RequestFrames(t.Context(), "r"); err != nil || len(fs) != 2 {
		t.Errorf("frames of r = %d, %v; want the two claims' checkpoints", len(fs), err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
