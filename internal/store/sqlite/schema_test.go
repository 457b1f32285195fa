package sqlite

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/schema.sql with the schema of a new store")

// schemaOf is the schema of the database in dir as its tables, indexes
// and triggers are stored (sqlite_schema, by name), and the keys of
// store_meta.
func schemaOf(t *testing.T, dir string) string {
	t.Helper()
	db, err := OpenFile(filepath.Join(dir, DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	rows, err := db.Query(`SELECT type, name, tbl_name, ifnull(sql, '') FROM sqlite_schema ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var typ, name, table, ddl string
		if err := rows.Scan(&typ, &name, &table, &ddl); err != nil {
			t.Fatal(err)
		}
		b.WriteString("-- " + typ + " " + name + " on " + table + "\n")
		if ddl != "" {
			b.WriteString(ddl + ";\n")
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err = db.Query(`SELECT key FROM store_meta ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			t.Fatal(err)
		}
		b.WriteString("-- store_meta " + key + "\n")
	}
	return b.String()
}

// TestSQLiteSchema: a new store has the schema of testdata/schema.sql
// (go test -update writes it again, for a new migration), and so has a
// store of schema 6, holding frames and idempotency records, once
// migrated.
func TestSQLiteSchema(t *testing.T) {
	fresh := t.TempDir()
	openSQLite(t, fresh, nil).Close()
	got := schemaOf(t, fresh)
	const golden = "testdata/schema.sql"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("the schema of a new store (-%s +got; go test -update accepts it):\n%s", golden, diff)
	}

	old := t.TempDir()
	w := oldDatabase(t, old, 6)
	for _, q := range []string{
		`INSERT INTO idempotency (key, owner, state, claimed, expires) VALUES ('k1', 'reach/1', 'done', 1, 9), ('k2', 'reach/1', 'claimed', 2, 9)`,
		`INSERT INTO frames (request, frame, state, started, updated) VALUES ('r1', 'f1', 'completed', 1, 1), ('r1', 'f2', 'executing', 2, 2)`,
	} {
		if _, err := w.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	openSQLite(t, old, nil).Close()
	if diff := cmp.Diff(string(want), schemaOf(t, old)); diff != "" {
		t.Errorf("the schema of a store of schema 6, migrated (-%s +got):\n%s", golden, diff)
	}
}
