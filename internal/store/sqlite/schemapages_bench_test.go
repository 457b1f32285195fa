package sqlite

import (
	"database/sql"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The layouts of a write call's rows that BenchmarkWriteSchemaPages
// compares: the store's own before migration 17 ("rowid"), with the room
// of migration 17 ("room"), and three it does not use.
var schemaLayouts = []struct {
	name, ddl string
	claim     string // $1 key, $2 request, $3 frame, $4 now, $5 expires, $6 room
	put       string // $1 call id, $2 key, $3 args, $4 now, $5 request, $6 frame
	end       []string
	// callFirst spells a derived key with the call's id before its
	// request's ("tool:CALL/ROOT", as the runtime spells the key of a call
	// the gateway numbered, ids.Numbered; the others keep "tool:ROOT/CALL",
	// as every key was before): the gateway numbers the calls whose client
	// named none in the order they come, so a batch's keys then follow
	// each other in the index.
	callFirst bool
}{
	{name: "rowid", ddl: schemaFrames(false) + schemaIdem(false),
		claim: claimSQL("nullif($6, $6)"), put: putSQL,
		end: []string{endSQL, `UPDATE idempotency SET state = 'done', result = $1, expires = $2 WHERE key = $3 AND owner = 'reach/0' AND $4 || $5 IS NOT NULL`}},
	{name: "room", ddl: schemaFrames(false) + schemaIdem(false),
		claim: claimSQL("zeroblob($6)"), put: putSQL,
		end: []string{endSQL, `UPDATE idempotency SET state = 'done', result = $1, expires = $2, room = NULL WHERE key = $3 AND owner = 'reach/0' AND $4 || $5 IS NOT NULL`}},
	// Each table keyed by what its index is: one b-tree each.
	{name: "without-rowid", ddl: schemaFrames(true) + schemaIdem(true),
		claim: claimSQL("nullif($6, $6)"), put: putSQL,
		end: []string{endSQL, `UPDATE idempotency SET state = 'done', result = $1, expires = $2 WHERE key = $3 AND owner = 'reach/0' AND $4 || $5 IS NOT NULL`}},
	// The result in a table of its own, keyed by the record's rowid: the
	// record's row does not grow.
	{name: "result-table", ddl: schemaFrames(false) + schemaIdem(false) + `CREATE TABLE results (seq INTEGER PRIMARY KEY, result BLOB);`,
		claim: claimSQL("nullif($6, $6)"), put: putSQL,
		end: []string{endSQL, `INSERT INTO results (seq, result) SELECT seq, $1 FROM idempotency WHERE key = $3 AND $2 || $4 || $5 IS NOT NULL`,
			`UPDATE idempotency SET state = 'done', expires = $2 WHERE key = $3 AND owner = 'reach/0' AND $1 || $4 || $5 IS NOT NULL`}},
	// The key index and the frames' in time order, each alone and both:
	// what the two indexes' leaves cost when a batch's entries follow each
	// other. The key spelled with the call's id first (the store's now);
	// the frames keyed (frame, request), the frame's id (package ids: its
	// second and a count) first, and no index leading with the request,
	// which a request's frames and the retention's delete read by (not the
	// store's: measured only).
	{name: "key-in-order", ddl: schemaFrames(false) + schemaIdem(false), callFirst: true,
		claim: claimSQL("zeroblob($6)"), put: putSQL,
		end: []string{endSQL, `UPDATE idempotency SET state = 'done', result = $1, expires = $2, room = NULL WHERE key = $3 AND owner = 'reach/0' AND $4 || $5 IS NOT NULL`}},
	{name: "frames-in-order", ddl: strings.Replace(schemaFrames(false), "UNIQUE (request, frame)", "UNIQUE (frame, request)", 1) + schemaIdem(false),
		claim: claimSQL("zeroblob($6)"), put: putSQL,
		end: []string{endSQL, `UPDATE idempotency SET state = 'done', result = $1, expires = $2, room = NULL WHERE key = $3 AND owner = 'reach/0' AND $4 || $5 IS NOT NULL`}},
	{name: "both-in-order", ddl: strings.Replace(schemaFrames(false), "UNIQUE (request, frame)", "UNIQUE (frame, request)", 1) + schemaIdem(false), callFirst: true,
		claim: claimSQL("zeroblob($6)"), put: putSQL,
		end: []string{endSQL, `UPDATE idempotency SET state = 'done', result = $1, expires = $2, room = NULL WHERE key = $3 AND owner = 'reach/0' AND $4 || $5 IS NOT NULL`}},
	// The claim and its checkpoint as one row, both indexes on it.
	{name: "one-row", ddl: `CREATE TABLE calls (seq INTEGER PRIMARY KEY, request TEXT NOT NULL, frame TEXT NOT NULL, kind TEXT NOT NULL,
	name TEXT NOT NULL, call_id TEXT NOT NULL, idem_key TEXT NOT NULL, state TEXT NOT NULL, args TEXT, undo TEXT, error TEXT,
	started INTEGER NOT NULL, updated INTEGER NOT NULL, origin INTEGER, key TEXT NOT NULL, owner TEXT NOT NULL, key_state TEXT NOT NULL,
	key_args TEXT NOT NULL, result BLOB, claimed INTEGER NOT NULL, expires INTEGER NOT NULL, room BLOB, UNIQUE (request, frame));
CREATE UNIQUE INDEX calls_key ON calls (key);`,
		claim: `INSERT INTO calls (key, owner, key_state, key_args, request, frame, claimed, expires, kind, name, call_id, idem_key, state, args,
	started, updated, room) VALUES ($1, 'reach/0', 'claimed', 'd1', $2, $3, $4, $5, 'tool', 'pay', substr($1, -20), $1, 'executing',
	'{"amount":1,"currency":"EUR","to":"acct-42"}', $4, $4, nullif($6, $6))`,
		put: `SELECT $1, $2, $3, $4, $5, $6`, // written with the claim
		end: []string{`UPDATE calls SET state = 'completed', undo = NULL, error = NULL, updated = $2, key_state = 'done', result = $1, expires = $2
	WHERE key = $3 AND $4 || $5 IS NOT NULL`}},
}

func schemaFrames(withoutRowid bool) string {
	if withoutRowid {
		return `CREATE TABLE frames (seq INTEGER NOT NULL, request TEXT NOT NULL, frame TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,
	call_id TEXT NOT NULL, idem_key TEXT NOT NULL, state TEXT NOT NULL, args TEXT, undo TEXT, error TEXT, started INTEGER NOT NULL,
	updated INTEGER NOT NULL, origin INTEGER, PRIMARY KEY (request, frame)) WITHOUT ROWID;`
	}
	return `CREATE TABLE frames (seq INTEGER PRIMARY KEY, request TEXT NOT NULL, frame TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,
	call_id TEXT NOT NULL, idem_key TEXT NOT NULL, state TEXT NOT NULL, args TEXT, undo TEXT, error TEXT, started INTEGER NOT NULL,
	updated INTEGER NOT NULL, origin INTEGER, UNIQUE (request, frame));`
}

func schemaIdem(withoutRowid bool) string {
	if withoutRowid {
		return `CREATE TABLE idempotency (seq INTEGER NOT NULL, key TEXT PRIMARY KEY, owner TEXT NOT NULL, state TEXT NOT NULL, result BLOB,
	claimed INTEGER NOT NULL, expires INTEGER NOT NULL, args TEXT NOT NULL, request TEXT NOT NULL, frame TEXT NOT NULL, room BLOB) WITHOUT ROWID;`
	}
	return `CREATE TABLE idempotency (seq INTEGER PRIMARY KEY, key TEXT NOT NULL, owner TEXT NOT NULL, state TEXT NOT NULL, result BLOB,
	claimed INTEGER NOT NULL, expires INTEGER NOT NULL, args TEXT NOT NULL, request TEXT NOT NULL, frame TEXT NOT NULL, room BLOB);
CREATE UNIQUE INDEX idempotency_key ON idempotency (key);`
}

func claimSQL(room string) string {
	return `INSERT INTO idempotency (seq, key, owner, state, args, request, frame, result, claimed, expires, room)
	VALUES ((SELECT ifnull(max(seq), 0) + 1 FROM idempotency), $1, 'reach/0', 'claimed', 'd1', $2, $3, NULL, $4, $5, ` + room + `)`
}

const putSQL = `INSERT INTO frames (seq, kind, name, call_id, idem_key, state, args, started, updated, request, frame)
	VALUES ((SELECT ifnull(max(seq), 0) + 1 FROM frames), 'tool', 'pay', $1, $2, 'executing', $3, $4, $4, $5, $6)`

const endSQL = `UPDATE frames SET state = 'completed', undo = NULL, error = NULL, updated = $2 WHERE request = $4 AND frame = $5 AND $1 || $3 IS NOT NULL`

// BenchmarkWriteSchemaPages counts the pages (WAL frames) a write call
// writes under other layouts of its rows than the store's, by b-tree where
// the SQLite build has dbstat (CGO_ENABLED=0): the store's four statements
// (the claim and its "executing" checkpoint; a commit later, the end and
// the key's result) replayed in SQL on a bare database, in commits of 8
// and of 40 calls (as served under 64 clients, and the most the writer
// gathers), the calls in 128 sessions with the runtime's ids, after 2,000
// calls. Each iteration is a commit: its batch's claims and checkpoints,
// and the ends of the batch before. result= is the length of each result:
// "room" keeps as much. Each statement binds every argument.
//
//	CGO_ENABLED=0 go test -run '^$' -bench WriteSchemaPages -benchtime 200x ./internal/store/sqlite/
func BenchmarkWriteSchemaPages(b *testing.B) {
	for _, l := range schemaLayouts {
		for _, batch := range []int{8, 40} {
			for _, result := range []int{67, 200} {
				b.Run(l.name+"/batch="+strconv.Itoa(batch)+"/result="+strconv.Itoa(result), func(b *testing.B) {
					schemaPages(b, l.ddl, l.claim, l.put, l.end, l.callFirst, batch, result)
				})
			}
		}
	}
}

func schemaPages(b *testing.B, ddl, claimQ, putQ string, endQ []string, callFirst bool, batch, resultLen int) {
	path := filepath.Join(b.TempDir(), "s.db")
	db, err := openPool(path, false, "journal_mode=WAL", "synchronous=NORMAL", "wal_autocheckpoint=0")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(ddl); err != nil {
		b.Fatal(err)
	}
	prep := func(q string) *sql.Stmt {
		st, err := db.Prepare(positional(q))
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	claim, put := prep(claimQ), prep(putQ)
	var ends []*sql.Stmt
	for _, q := range endQ {
		ends = append(ends, prep(q))
	}
	next := servedIDs()
	args := `{"amount":1,"currency":"EUR","to":"acct-42"}`
	result := []byte(strings.Repeat("r", resultLen))
	type call struct{ key, req, frame string }
	var prev []call
	commit := func() {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now().UnixNano()
		for _, c := range prev {
			for _, st := range ends {
				if _, err := tx.Stmt(st).Exec(result, now, c.key, c.req, c.frame); err != nil {
					b.Fatal(err)
				}
			}
		}
		prev = prev[:0]
		for range batch {
			req, frame, callID := next()
			key := "alice\x00\x00pay:" + req + "/" + callID
			if callFirst {
				key = "alice\x00\x00pay:" + callID + "/" + req
			}
			if _, err := tx.Stmt(claim).Exec(key, req, frame, now, now+3600e9, resultLen); err != nil {
				b.Fatal(err)
			}
			if _, err := tx.Stmt(put).Exec(callID, key, args, now, req, frame); err != nil {
				b.Fatal(err)
			}
			prev = append(prev, call{key, req, frame})
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	for range 2000 / batch {
		commit()
	}
	var size int64
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		b.Fatal(err)
	}
	wal := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			b.Fatal(err)
		}
		return (fi.Size() - 32) / (size + 24)
	}
	from := wal()
	for b.Loop() {
		commit()
	}
	calls := float64(b.N * batch)
	b.ReportMetric(float64(wal()-from)/calls, "pages/call")
	tree := map[uint32]string{}
	rows, err := db.Query(`SELECT name, pageno FROM dbstat`)
	if err != nil {
		return // no dbstat in the cgo build's SQLite
	}
	for rows.Next() {
		var name string
		var page uint32
		if err := rows.Scan(&name, &page); err != nil {
			b.Fatal(err)
		}
		tree[page] = name
	}
	rows.Close()
	data, err := os.ReadFile(path + "-wal")
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int{}
	for off := 32 + from*(size+24); off+24+size <= int64(len(data)); off += size + 24 {
		name := tree[binary.BigEndian.Uint32(data[off:])]
		if name == "" {
			name = "other"
		}
		out[name]++
	}
	for name, n := range out {
		b.ReportMetric(float64(n)/calls, name+"-pages/call")
	}
}
