package pgtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestDatabase starts the cluster, writes to a database of its own, and
// reads it back after a restart: the cluster is a real, durable server.
func TestDatabase(t *testing.T) {
	ctx := t.Context()
	url := Database(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kv (k text PRIMARY KEY, v text); INSERT INTO kv VALUES ('a', 'b')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := Shared(t).Restart(); err != nil {
		t.Fatal(err)
	}
	conn, err = pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var v string
	if err := conn.QueryRow(ctx, "SELECT v FROM kv WHERE k = 'a'").Scan(&v); err != nil || v != "b" {
		t.Fatalf("after a restart: %q, %v; want \"b\"", v, err)
	}
	if other := Database(t); other == url {
		t.Fatalf("two databases share the URL %s", url)
	}
}

// CPU counts the server's work: a query that keeps a backend busy adds to
// it.
func TestCPU(t *testing.T) {
	ctx := t.Context()
	url := Database(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	before, err := Shared(t).CPU()
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	if err := conn.QueryRow(ctx, "SELECT sum(i) FROM generate_series(1, 5000000) i").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	after, err := Shared(t).CPU()
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("the cluster's CPU went from %v to %v over a query that kept it busy", before, after)
	}
}

// Without PostgreSQL a test that needs it skips, saying why, and fails
// under REACH_CI: CI never passes by skipping.
func TestMissingFailsUnderCI(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		Database(t)
		return
	}
	run := func(ci string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestMissingFailsUnderCI$", "-test.v")
		cmd.Env = append(os.Environ(), "PGTEST_CHILD=1", "REACH_PG_BIN="+t.TempDir(), "REACH_CI="+ci)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("1")
	if err == nil || !strings.Contains(out, "PostgreSQL is needed and could not be started") {
		t.Errorf("under REACH_CI without PostgreSQL: %v\n%s", err, out)
	}
	out, err = run("")
	if err != nil || !strings.Contains(out, "--- SKIP") || !strings.Contains(out, "install PostgreSQL") {
		t.Errorf("without REACH_CI nor PostgreSQL: %v\n%s", err, out)
	}
}
