package audit_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// tamperLog builds an audit log of 50 events with a checkpoint every 16
// (and a closing one at 50) in dir, and closes it.
func tamperLog(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log, err := audit.New(ctx, st, &audit.Options{CheckpointEvery: 16})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := log.Append(ctx, testEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
}

func testEvent(i int) *audit.Event {
	return &audit.Event{Time: time.Unix(1_700_000_000, int64(i)*1e6), Request: fmt.Sprintf("req_%d", i%3),
		Frame: fmt.Sprintf("%016x", i+1), Agent: "main", Principal: "alice", Kind: "tool", Name: "transfer",
		CallID: fmt.Sprintf("c%d", i), Decision: "completed", Args: []byte(fmt.Sprintf(`{"amount":%d,"to":"bob"}`, i)),
		Result: "ok", Latency: time.Millisecond}
}

// copyDB copies the database file of a closed store into a new folder.
func copyDB(t *testing.T, from string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(from, sqlite.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, sqlite.DefaultFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// dropTriggers is what a tamperer runs first: the append-only triggers
// stop UPDATE and DELETE, not someone with write access to the file.
const dropTriggers = "DROP TRIGGER IF EXISTS audit_no_update; DROP TRIGGER IF EXISTS audit_no_delete;\n"

type tamperCase struct {
	name    string
	sql     string                         // run after dropTriggers
	edit    func(t *testing.T, db *sql.DB) // or this, in Go
	seq     int64                          // the first bad event Verify must name
	problem string
}

var tamperCases = []tamperCase{
	{name: "edit the tool name", seq: 17, problem: audit.Edited,
		sql: `UPDATE audit SET event = json_set(event, '$.name', 'evil') WHERE seq = 17;`},
	{name: "edit an argument", seq: 30, problem: audit.Edited,
		sql: `UPDATE audit SET event = replace(event, '"amount":29', '"amount":9') WHERE seq = 30;`},
	{name: "edit the time", seq: 5, problem: audit.Edited,
		sql: `UPDATE audit SET time = time + 1 WHERE seq = 5;`},
	{name: "edit the request", seq: 9, problem: audit.Edited,
		sql: `UPDATE audit SET request = 'req_other' WHERE seq = 9;`},
	{name: "edit the stored hash", seq: 20, problem: audit.Edited,
		sql: `UPDATE audit SET hash = zeroblob(32) WHERE seq = 20;`},
	{name: "swap the contents of two rows", seq: 10, problem: audit.Edited,
		sql: `CREATE TEMP TABLE t AS SELECT seq, event FROM audit WHERE seq IN (10, 11);
UPDATE audit SET event = (SELECT event FROM t WHERE t.seq = 21 - audit.seq) WHERE seq IN (10, 11);`},
	{name: "delete a row", seq: 20, problem: audit.Missing,
		sql: `DELETE FROM audit WHERE seq = 20;`},
	{name: "delete the first row", seq: 1, problem: audit.Missing,
		sql: `DELETE FROM audit WHERE seq = 1;`},
	{name: "delete rows", seq: 30, problem: audit.Missing,
		sql: `DELETE FROM audit WHERE seq BETWEEN 30 AND 33;`},
	{name: "delete a row and renumber the rest", seq: 20, problem: audit.Moved,
		sql: `DELETE FROM audit WHERE seq = 20;
UPDATE audit SET seq = -(seq - 1) WHERE seq > 20;
UPDATE audit SET seq = -seq WHERE seq < 0;`},
	{name: "insert a row before the first", seq: 0, problem: audit.Inserted,
		sql: `INSERT INTO audit (seq, time, request, event, prev_hash, hash) SELECT 0, time, request, replace(event, '"to":"bob"', '"to":"mallory"'), prev_hash, hash FROM audit WHERE seq = 1;`},
	{name: "delete the newest rows", seq: 46, problem: audit.Truncated,
		sql: `DELETE FROM audit WHERE seq > 45;`},
	{name: "delete the last row", seq: 50, problem: audit.Truncated,
		sql: `DELETE FROM audit WHERE seq = 50;`},
	{name: "swap two rows", seq: 10, problem: audit.Moved,
		sql: `UPDATE audit SET seq = -1 WHERE seq = 10;
UPDATE audit SET seq = 10 WHERE seq = 11;
UPDATE audit SET seq = 11 WHERE seq = -1;`},
	{name: "insert a row", seq: 26, problem: audit.Inserted,
		sql: `UPDATE audit SET seq = -(seq + 1) WHERE seq >= 26;
UPDATE audit SET seq = -seq WHERE seq < 0;
INSERT INTO audit (seq, time, request, event, prev_hash, hash)
	SELECT 26, time + 1, request, json_set(event, '$.name', 'forged'), hash, randomblob(32) FROM audit WHERE seq = 25;`},
	{name: "insert a row with a forged link", seq: 26, problem: audit.Replaced,
		sql: `UPDATE audit SET seq = -(seq + 1) WHERE seq >= 26;
UPDATE audit SET seq = -seq WHERE seq < 0;
INSERT INTO audit (seq, time, request, event, prev_hash, hash)
	SELECT 26, time + 1, request, event, randomblob(32), randomblob(32) FROM audit WHERE seq = 25;`},
	{name: "append a forged row", seq: 51, problem: audit.Edited,
		sql: `INSERT INTO audit (seq, time, request, event, prev_hash, hash)
	SELECT 51, time + 1, request, event, hash, randomblob(32) FROM audit WHERE seq = 50;`},
	{name: "edit a checkpoint", seq: 32, problem: audit.Checkpoint,
		sql: `UPDATE checkpoints SET hash = zeroblob(32) WHERE seq = 32;`},
	{name: "edit a row and recompute its hash", seq: 18, problem: audit.Unlinked,
		edit: func(t *testing.T, db *sql.DB) { rewrite(t, db, 17, 17) }},
	{name: "insert a row with a correct hash", seq: 27, problem: audit.Moved,
		edit: func(t *testing.T, db *sql.DB) {
			mustExec(t, db, dropTriggers+`UPDATE audit SET seq = -(seq + 1) WHERE seq >= 26;
UPDATE audit SET seq = -seq WHERE seq < 0;
INSERT INTO audit (seq, time, request, event, prev_hash, hash)
	SELECT 26, time + 1, request, json_set(event, '$.name', 'forged'), hash, x'' FROM audit WHERE seq = 25;`)
			rewrite(t, db, 26, 26)
		}},
	{name: "rewrite the chain from seq 40 with recomputed hashes", seq: 48, problem: audit.Checkpoint,
		edit: func(t *testing.T, db *sql.DB) { rewrite(t, db, 40, 50) }},
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
}

// rewrite edits the events from seq `from` to `to`, and recomputes their
// hashes (each linked to the previous one) as a tamperer who knows the
// algorithm would.
func rewrite(t *testing.T, db *sql.DB, from, to int64) {
	t.Helper()
	mustExec(t, db, dropTriggers)
	var prev []byte
	if err := db.QueryRow(`SELECT hash FROM audit WHERE seq = ?`, from-1).Scan(&prev); err != nil {
		t.Fatal(err)
	}
	for seq := from; seq <= to; seq++ {
		var r store.AuditRecord
		var tm int64
		if err := db.QueryRow(`SELECT seq, time, request, CAST(event AS BLOB) FROM audit WHERE seq = ?`, seq).
			Scan(&r.Seq, &tm, &r.Request, &r.Data); err != nil {
			t.Fatal(err)
		}
		r.Time = time.Unix(0, tm)
		r.Data = bytes.Replace(r.Data, []byte(`"to":"bob"`), []byte(`"to":"eve"`), 1)
		r.PrevHash = prev
		r.Hash = audit.Hash(&r)
		if _, err := db.Exec(`UPDATE audit SET event = ?, prev_hash = ?, hash = ? WHERE seq = ?`,
			string(r.Data), r.PrevHash, r.Hash, seq); err != nil {
			t.Fatal(err)
		}
		prev = r.Hash
	}
}

func verifyDir(t *testing.T, dir string) (*audit.Report, error) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), dir, &sqlite.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return audit.Verify(context.Background(), st)
}

func checkTampered(t *testing.T, tc tamperCase, rep *audit.Report, err error) {
	t.Helper()
	ce, ok := errors.AsType[*audit.ChainError](err)
	if !ok {
		t.Fatalf("Verify = %+v, %v; want a ChainError at seq %d (%s)", rep, err, tc.seq, tc.problem)
	}
	if !errors.Is(err, audit.ErrTampered) {
		t.Errorf("%v does not match ErrTampered", err)
	}
	if ce.Seq != tc.seq || ce.Problem != tc.problem {
		t.Errorf("Verify failed at seq %d (%s), want seq %d (%s): %v", ce.Seq, ce.Problem, tc.seq, tc.problem, err)
	}
	t.Log(err)
}

func TestVerifyIntact(t *testing.T) {
	dir := t.TempDir()
	tamperLog(t, dir)
	rep, err := verifyDir(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Events != 50 || rep.Checkpoints != 4 || len(rep.Head) != audit.HashSize {
		t.Errorf("Verify = %+v, want 50 events, 4 checkpoints (16, 32, 48, 50)", rep)
	}
}

// TestTamperSQL edits, deletes, reorders and inserts rows with SQL through
// the database driver, and checks that Verify names the first bad event.
func TestTamperSQL(t *testing.T) {
	tmpl := t.TempDir()
	tamperLog(t, tmpl)
	for _, tc := range tamperCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDB(t, tmpl)
			db, err := sqlite.OpenFile(filepath.Join(dir, sqlite.DefaultFile))
			if err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1) // temp tables live in one connection
			if tc.edit != nil {
				tc.edit(t, db)
			} else {
				mustExec(t, db, dropTriggers+tc.sql)
			}
			db.Close()
			rep, err := verifyDir(t, dir)
			checkTampered(t, tc, rep, err)
		})
	}
}

// TestTamperCLI does the same with the sqlite3 command-line shell, the
// tool a person with access to the file would use.
func TestTamperCLI(t *testing.T) {
	cli, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("the sqlite3 shell is not installed (apt-get install -y sqlite3); the same cases ran through the driver in TestTamperSQL")
	}
	tmpl := t.TempDir()
	tamperLog(t, tmpl)
	for _, tc := range tamperCases {
		if tc.sql == "" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDB(t, tmpl)
			cmd := exec.Command(cli, "-bail", filepath.Join(dir, sqlite.DefaultFile))
			cmd.Stdin = bytes.NewBufferString(dropTriggers + tc.sql)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("sqlite3: %v\n%s", err, out.String())
			}
			rep, err := verifyDir(t, dir)
			checkTampered(t, tc, rep, err)
		})
	}
}

// Without dropping the triggers, the shell cannot edit the log at all.
func TestTamperCLITriggers(t *testing.T) {
	cli, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("the sqlite3 shell is not installed (apt-get install -y sqlite3)")
	}
	dir := t.TempDir()
	tamperLog(t, dir)
	cmd := exec.Command(cli, filepath.Join(dir, sqlite.DefaultFile), `UPDATE audit SET time = 0 WHERE seq = 1`)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Run(); err == nil {
		t.Error("sqlite3 updated an audit row despite the append-only trigger")
	}
	if _, err := verifyDir(t, dir); err != nil {
		t.Errorf("Verify after a refused edit: %v", err)
	}
}
