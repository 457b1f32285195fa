package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store/sqlite"
)

// startLogged is startReach, returning the file its log goes to and a
// channel closed once the process has exited.
func startLogged(t *testing.T, cfg, addr, data string) (*exec.Cmd, string, <-chan struct{}) {
	t.Helper()
	cmd := serveCmd(t, cfg, addr, data)
	logf, err := os.CreateTemp(t.TempDir(), "serve-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			t.Errorf("reach serve (pid %d) had not exited a minute after it was killed", cmd.Process.Pid)
		}
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("the log of reach serve:\n%s", b)
		}
	})
	client := &http.Client{Timeout: 10 * time.Second} // a process that accepts and never answers fails the test
	for range 3000 {
		select {
		case <-exited:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("reach serve did not start:\n%s", b)
		default:
		}
		if resp, err := client.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return cmd, logf.Name(), exited
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("reach serve did not answer")
	return nil, "", nil
}

// TestBadRows: a store with one row of a kind that does not decode (a disk
// error, a hand edit, a partial restore) still starts; reach logs one
// warning naming the row's table and key, keeps the row as it is, and
// treats it on the safe side, while the rest works.
func TestBadRows(t *testing.T) {
	if testing.Short() {
		t.Skip("starts reach serve several times")
	}
	c := &counter{runs: map[string]int{}}
	up := shopUpstream(t, c)
	cfg := writeConfig(t, `upstreams:
  - {name: shop, url: '`+up+`'}
tools:
  shop__search: {access: read}
  shop__book: {access: write, reentrancy: reentrant}
  shop__close: {access: high_risk}
`)
	// One store made by a real run (its tools pinned), copied for each case.
	seed := t.TempDir()
	addr := freeAddr(t)
	first, _, firstExited := startLogged(t, cfg, addr, seed)
	if r := callHTTP(t, "http://"+addr, "seed", "s1", "shop__search", `{"id":"x"}`, ""); r["status"] != "success" {
		t.Fatalf("search: %v", r)
	}
	if r := callHTTP(t, "http://"+addr, "seed", "b1", "shop__book", `{"id":"y"}`, "k-bad"); r["status"] != "success" {
		t.Fatalf("book: %v", r)
	}
	first.Process.Signal(syscall.SIGTERM)
	// Until it closed its store (its last writes checkpointed into the
	// file copied below): a fixed sleep after /healthz stopped answering
	// could copy the file before, without the rows above.
	select {
	case <-firstExited:
	case <-time.After(time.Minute):
		t.Fatal("reach serve had not exited a minute after SIGTERM")
	}
	dbFile, err := os.ReadFile(filepath.Join(seed, sqlite.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixNano()
	later := now + int64(time.Hour)
	sessionHash := sha256.Sum256([]byte("sess-bad"))

	for _, tc := range []struct {
		name  string
		sql   string // makes the bad row ($NOW, $LATER)
		table string // of the warning
		key   string // the row, in the warning
		row   string // a query of the row, which must still answer what sql wrote
		want  string // what it answers
		check func(t *testing.T, base string)
	}{
		{name: "approval", table: "approvals", key: "apr_bad",
			sql: `INSERT INTO approvals (id, key, status, version, created, expires, updated, data)
				VALUES ('apr_bad', 'k', 'pending', 1, $NOW, $LATER, $NOW, '{not json')`,
			row: `SELECT status || data FROM approvals WHERE id = 'apr_bad'`, want: "pending{not json",
			check: func(t *testing.T, base string) {
				// It approves nothing and is not listed; the list answers.
				code, body := get(t, base+"/v1/approvals?status=pending")
				if code != 200 || strings.Contains(body, "apr_bad") {
					t.Errorf("GET /v1/approvals: %d %s", code, body)
				}
				if code, body := get(t, base+"/v1/approvals/apr_bad"); code == 200 {
					t.Errorf("GET /v1/approvals/apr_bad: %d %s", code, body)
				}
			}},
		{name: "request roles", table: "requests", key: "r_bad",
			sql: `INSERT INTO requests (id, principal, state, started, updated, roles) VALUES ('r_bad', 'anonymous', 'running', $NOW, $NOW, '[not')`,
			row: `SELECT state || roles FROM requests WHERE id = 'r_bad'`, want: "running[not",
			check: func(t *testing.T, base string) {
				// Nothing acts as it: a call naming it is refused, and runs nothing.
				r := postTo(t, base+"/v1/calls", `{"request_id":"r_bad","tool_calls":[{"call_id":"b1","tool":"shop__book","arguments":{"id":"y"}}]}`)
				if strings.Contains(fmt.Sprint(r), "success") || c.n("book") != 0 {
					t.Errorf("a call in the unreadable request: %v (book ran %d times)", r, c.n("book"))
				}
				if code, _ := get(t, base+"/v1/requests"); code != 200 {
					t.Errorf("GET /v1/requests: %d", code)
				}
			}},
		{name: "request attributes", table: "requests", key: "r_bad",
			sql: `INSERT INTO requests (id, state, started, updated, attributes) VALUES ('r_bad', 'stopped', $NOW, $NOW, '{not')`,
			row: `SELECT state || attributes FROM requests WHERE id = 'r_bad'`, want: "stopped{not"},
		{name: "request usage", // read on demand: shown without what does not decode
			sql: `INSERT INTO requests (id, state, started, updated, ended, budget, usage, cause) VALUES ('r_use', 'stopped', $NOW, $NOW, $NOW, '{not', '{not', '{not')`,
			row: `SELECT state || budget || usage || cause FROM requests WHERE id = 'r_use'`, want: "stopped{not{not{not",
			check: func(t *testing.T, base string) {
				if code, body := get(t, base+"/v1/requests/r_use"); code != 200 || !strings.Contains(body, "stopped") {
					t.Errorf("GET /v1/requests/r_use: %d %s", code, body)
				}
				if code, body := get(t, base+"/v1/requests"); code != 200 || !strings.Contains(body, "r_use") {
					t.Errorf("GET /v1/requests: %d %s", code, body)
				}
			}},
		{name: "dead letter", // read on demand
			sql: `INSERT INTO dead_letters (request, frame, tool, args, state, created, updated) VALUES ('r1', '00000000000000f1', 'shop__book', '{not', 'open', $NOW, $NOW)`,
			row: `SELECT state || args FROM dead_letters WHERE tool = 'shop__book'`, want: "open{not",
			check: func(t *testing.T, base string) {
				if code, body := get(t, base+"/v1/deadletters"); code != 200 || !strings.Contains(body, "shop__book") {
					t.Errorf("GET /v1/deadletters: %d %s", code, body)
				}
			}},
		{name: "undo", table: "frames", key: "r_und",
			sql: `INSERT INTO requests (id, state, started, updated) VALUES ('r_und', 'running', $NOW, $NOW);
				INSERT INTO frames (request, frame, kind, name, state, args, undo, started, updated)
				VALUES ('r_und', '00000000000000f1', 'tool', 'shop__book', 'completed', '{"id":"z"}', '{not', $NOW, $NOW)`,
			row: `SELECT state || undo FROM frames WHERE request = 'r_und'`, want: "completed{not"},
		{name: "idempotency result", table: "idempotency", key: "k-bad",
			sql: `UPDATE idempotency SET result = '{not' WHERE instr(CAST(key AS BLOB), CAST(':k-bad' AS BLOB)) > 0`,
			row: `SELECT state || result FROM idempotency WHERE instr(CAST(key AS BLOB), CAST(':k-bad' AS BLOB)) > 0`, want: "done{not",
			check: func(t *testing.T, base string) {
				// Refused, not run: the call it records may have run.
				r := callHTTP(t, base, "", "b1", "shop__book", `{"id":"y"}`, "k-bad")
				e, _ := r["error"].(map[string]any)
				if r["status"] == "success" || e["code"] != "idempotency_record_unreadable" || c.n("book") != 0 {
					t.Errorf("a call with the unreadable key: %v (book ran %d times)", r, c.n("book"))
				}
				if r := callHTTP(t, base, "", "b2", "shop__book", `{"id":"y"}`, "k-good"); r["status"] != "success" {
					t.Errorf("a call with another key: %v", r)
				}
			}},
		{name: "pin", table: "pins", key: "shop__book",
			sql: `UPDATE pins SET data = '{not' WHERE tool = 'shop__book'`,
			row: `SELECT data FROM pins WHERE tool = 'shop__book'`, want: "{not",
			check: func(t *testing.T, base string) {
				// Its tool is held as changed; the others are served.
				if r := callHTTP(t, base, "", "s1", "shop__search", `{"id":"y"}`, ""); r["status"] != "success" {
					t.Errorf("search beside the unreadable pin: %v", r)
				}
				if r := callHTTP(t, base, "", "b1", "shop__book", `{"id":"y"}`, ""); r["status"] == "success" || c.n("book") != 0 {
					t.Errorf("a call of the tool whose pin is unreadable: %v", r)
				}
			}},
		{name: "audit event", // read on demand: the views show it as unreadable, and the rest
			sql: `INSERT INTO audit (seq, time, request, event, prev_hash, hash)
				SELECT max(seq) + 1, $NOW, 'seed', '{not', x'00', x'00' FROM audit`,
			row: `SELECT event FROM audit WHERE request = 'seed' AND event = '{not'`, want: "{not",
			check: func(t *testing.T, base string) {
				code, body := get(t, base+"/v1/audit?request=seed")
				if code != 200 || !strings.Contains(body, `"unreadable"`) || !strings.Contains(body, "shop__book") {
					t.Errorf("GET /v1/audit?request=seed: %d %s", code, body)
				}
				if code, body := get(t, base+"/v1/requests/seed/graph"); code != 200 || !strings.Contains(body, "shop__book") {
					t.Errorf("GET /v1/requests/seed/graph: %d %s", code, body)
				}
			}},
		{name: "session", table: "sessions", key: hex.EncodeToString(sessionHash[:]),
			sql: `INSERT INTO sessions (hash, init, created, used) VALUES ('` + hex.EncodeToString(sessionHash[:]) + `', '{not', $NOW, $NOW)`,
			row: `SELECT init FROM sessions WHERE hash = '` + hex.EncodeToString(sessionHash[:]) + `'`, want: "{not",
			check: func(t *testing.T, base string) {
				// Not taken over: its client is told to open a new one.
				req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Session-Id", "sess-bad")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusNotFound {
					t.Errorf("a request in the unreadable session: %d", resp.StatusCode)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.mu.Lock()
			c.runs = map[string]int{}
			c.mu.Unlock()
			data := t.TempDir()
			dbPath := filepath.Join(data, sqlite.DefaultFile)
			if err := os.WriteFile(dbPath, dbFile, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := sqlite.OpenFile(dbPath)
			if err != nil {
				t.Fatal(err)
			}
			q := strings.NewReplacer("$NOW", fmt.Sprint(now), "$LATER", fmt.Sprint(later)).Replace(tc.sql)
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
			db.Close()
			addr := freeAddr(t)
			_, logPath, _ := startLogged(t, cfg, addr, data)
			if tc.check != nil {
				tc.check(t, "http://"+addr)
			}
			log, _ := os.ReadFile(logPath)
			var warned int
			for line := range strings.Lines(string(log)) {
				if strings.Contains(line, "level=WARN") && strings.Contains(line, "table="+tc.table) && strings.Contains(line, tc.key) {
					warned++
				}
			}
			if warned == 0 && tc.table != "" {
				t.Errorf("no warning naming table %s and %s in the log:\n%s", tc.table, tc.key, log)
			}
			db, err = sqlite.OpenFile(dbPath)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var got string
			if err := db.QueryRow(tc.row).Scan(&got); err != nil || got != tc.want {
				t.Errorf("the bad row now: %q, %v; want it kept as %q", got, err, tc.want)
			}
		})
	}
}
