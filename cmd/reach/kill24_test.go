package main

import (
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestKill24SecretEntitiesRanOnPostgres kills instance a of two sharing a
// PostgreSQL store (kill -9) after a write's tool ran, before the write
// claimed again the entity it writes (entities.ran), as
// TestKill22bEntitiesRanOnPostgres does, on an entity named from a
// registered secret: acct:{key}, the key a value of the secrets file, so
// that the checkpoint keeps the key masked and its arguments cannot name
// the entity. A request on b read the account while the write ran. b
// recovers a's dead life: it moves the account on by the key the
// checkpoint kept (a digest, never the secret), so that the request's
// next write of it, based on what it read while the write ran, is refused
// stale_read and does not run. Before, the account was not moved on and
// the stale write ran. The secret is nowhere in the shared store, the
// instances' data folders or their logs.
func TestKill24SecretEntitiesRanOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, secrets := killedAtSecretEntityRan(t, "2s")
	for deadline := time.Now().Add(2 * time.Minute); storedRequest(t, f.url, "r-write").Ended.IsZero(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("b did not recover a's dead life: r-write is stored %+v", storedRequest(t, f.url, "r-write"))
		}
	}
	staleWriteRefused(t, f, secrets)
}

// TestKill24SecretEntitiesAtRestartOnPostgres is
// TestKill24SecretEntitiesRanOnPostgres with an instance_ttl (10m) that no
// recovery of a's killed life comes within, as
// TestKill23EntitiesAtRestartOnPostgres: a started again under its name
// moves the account on at once, by the key its earlier life's open
// checkpoint kept, and the stale write on b is refused. Before, the
// account was not moved on and the stale write ran.
func TestKill24SecretEntitiesAtRestartOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, secrets := killedAtSecretEntityRan(t, "10m")
	f.start(0)
	if got := storedRequest(t, f.url, "r-write"); !got.Ended.IsZero() {
		t.Fatalf("r-write is stored ended %+v: a's earlier life was recovered, which a TTL of 10m should not allow yet", got)
	}
	staleWriteRefused(t, f, secrets)
}

// kill24Secret is the registered secret of the TestKill24 tests on
// PostgreSQL: the key of the account acct:{key}.
const kill24Secret = "acct_live_9f3c2e7d41b8a605"

// staleWriteRefused has request r-read on b write the account it read
// while a's write of it ran, wants it refused stale_read and not run, and
// the secret nowhere once b is stopped.
func staleWriteRefused(t *testing.T, f *fleet, secrets string) {
	t.Helper()
	const secret = kill24Secret
	r := callHTTP(t, f.base(1), "r-read", "c2", "up__count", fmt.Sprintf(`{"key":%q}`, secret), "")
	if e, _ := r["error"].(map[string]any); r["status"] == "success" || e["code"] != "stale_read" {
		t.Errorf("a write of the account based on the read made while a's write ran: %v; want it refused stale_read", r)
	}
	if n := f.up.count("count " + secret); n != 0 {
		t.Errorf("the stale write ran %d times; want never", n)
	}
	if strings.Contains(fmt.Sprint(r), secret) {
		t.Errorf("the answer shows the secret: %v", r)
	}
	f.stop(0)
	f.stop(1)
	secretNowhere(t, f.url, filepath.Dir(secrets), secrets, secret)
}

// killedAtSecretEntityRan is killedAtEntitiesRan on acct:{key}, the key a
// value of the secrets file (kill24Secret): a's write of the account is
// killed at entities.ran while a request on b read it. It returns the
// secrets file's path.
func killedAtSecretEntityRan(t *testing.T, ttl string) (*fleet, string) {
	t.Helper()
	const secret = kill24Secret
	secrets := filepath.Join(t.TempDir(), "secrets.env")
	if err := os.WriteFile(secrets, []byte("ACCOUNT="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, g := gateFleet(t, ttl, fmt.Sprintf(`secrets: {file: '%s'}
tools:
  gate__gate: {writes: ["acct:{key}"]}
  up__hop: {reads: ["acct:{key}"]}
  up__count: {writes: ["acct:{key}"]}
`, secrets))
	f.stop(0)
	cmd, reached := startReachAt(t, f.cfg[0], f.addr[0], f.data[0], "entities.ran")
	f.cmd[0] = cmd
	postCalls(f, 0, fmt.Sprintf(`{"request_id":"r-write","tool_calls":[{"call_id":"g","tool":"gate__gate","arguments":{"key":%q},"idempotency_key":"k-acct"}]}`, secret))
	awaitGate(t, g, secret)
	if r := callHTTP(t, f.base(1), "r-read", "c1", "up__hop", fmt.Sprintf(`{"key":%q}`, secret), ""); r["status"] != "success" {
		t.Fatalf("the read of the account on b: %v", r)
	}
	close(g.gate(secret))
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("a never reached entities.ran")
	}
	f.kill(0)
	return f, secrets
}

// TestKill24SecretEntitiesOnSQLite is TestKill24SecretEntitiesRanOnPostgres
// on one gateway with SQLite, which keeps entity versions in memory and
// no entity keys with a checkpoint: a write of acct:{key} (the key a value
// of the secrets file) is cut off by a kill -9 while its tool runs, after
// another request read the account. The restart interrupts that request:
// its write based on the read is refused and does not run. The secret is
// in no file of the data folder (the SQLite files) or the logs.
func TestKill24SecretEntitiesOnSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a gateway: skipped in -short mode")
	}
	const secret = "acct_live_3b7e91c05d2fa864"
	secrets := filepath.Join(t.TempDir(), "secrets.env")
	if err := os.WriteFile(secrets, []byte("ACCOUNT="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up, upURL := sharedUpstream(t)
	g, gateURL := gateUpstream(t)
	f := &fleet{t: t}
	f.addr[0], f.data[0] = freeAddr(t), t.TempDir()
	f.cfg[0] = writeConfig(t, fmt.Sprintf(`upstreams:
  - {name: up, url: '%s'}
  - {name: gate, url: '%s'}
secrets: {file: '%s'}
tools:
  gate__gate: {writes: ["acct:{key}"]}
  up__hop: {reads: ["acct:{key}"]}
  up__count: {writes: ["acct:{key}"]}
`, upURL, gateURL, secrets))
	f.start(0)
	postCalls(f, 0, fmt.Sprintf(`{"request_id":"r-write","tool_calls":[{"call_id":"g","tool":"gate__gate","arguments":{"key":%q},"idempotency_key":"k-acct"}]}`, secret))
	awaitGate(t, g, secret)
	if r := callHTTP(t, f.base(0), "r-read", "c1", "up__hop", fmt.Sprintf(`{"key":%q}`, secret), ""); r["status"] != "success" {
		t.Fatalf("the read of the account: %v", r)
	}
	f.kill(0)
	close(g.gate(secret))
	f.start(0) // serving once its recovery ran
	r := callHTTP(t, f.base(0), "r-read", "c2", "up__count", fmt.Sprintf(`{"key":%q}`, secret), "")
	if e, _ := r["error"].(map[string]any); r["status"] == "success" || e["code"] != "request_interrupted" {
		t.Errorf("a write of the account based on the read made while the cut-off write ran: %v; want it refused request_interrupted", r)
	}
	if n := up.count("count " + secret); n != 0 {
		t.Errorf("the stale write ran %d times; want never", n)
	}
	if strings.Contains(fmt.Sprint(r), secret) {
		t.Errorf("the answer shows the secret: %v", r)
	}
	f.stop(0)
	secretNowhere(t, "", filepath.Dir(secrets), secrets, secret)
}

// secretNowhere fails t if secret, as it is or in hex, is in a row of a
// table of the PostgreSQL database at url (if any), or in a file under
// dir's parent (the test's folders: the instances' data, their logs) but
// the secrets file.
func secretNowhere(t *testing.T, url, dir, secretsFile, secret string) {
	t.Helper()
	forms := []string{secret, hex.EncodeToString([]byte(secret))}
	if url != "" {
		secretNotStored(t, url, forms)
	}
	filesHoldNo(t, filepath.Dir(dir), secretsFile, forms)
}

// secretNotStored fails t if a row of a table of the PostgreSQL database
// at url holds one of forms.
func secretNotStored(t *testing.T, url string, forms []string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	rows, err := conn.Query(t.Context(), `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) == 0 {
		t.Fatalf("the store's tables: %v, %v", tables, err)
	}
	for _, table := range tables {
		for _, s := range forms {
			var n int
			q := fmt.Sprintf(`SELECT count(*) FROM %s x WHERE strpos(x::TEXT, $1) > 0`, pgx.Identifier{table}.Sanitize())
			if err := conn.QueryRow(t.Context(), q, s).Scan(&n); err != nil {
				t.Fatalf("searching %s: %v", table, err)
			}
			if n > 0 {
				t.Errorf("the store's table %s holds the secret in %d rows", table, n)
			}
		}
	}
}

// filesHoldNo fails t if a file under root but secretsFile holds one of
// forms.
func filesHoldNo(t *testing.T, root, secretsFile string, forms []string) {
	t.Helper()
	files, logs := 0, 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == secretsFile {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), "serve-") {
			logs++
		}
		files++
		for _, s := range forms {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds the secret", strings.TrimPrefix(p, root))
			}
		}
		return nil
	})
	if err != nil || files == 0 || logs == 0 {
		t.Fatalf("searching the test's files: %d read, %d of them logs, %v", files, logs, err)
	}
}
