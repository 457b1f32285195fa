package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// BenchmarkAuditTenantPages counts the pages (WAL frames) a commit of 40
// audit events writes with and without audit_tenant (migration 18): events
// of no tenant, of one, of eight, after 20,000 of them. The index is
// partial: events of no tenant have no entry.
//
//	go test -run '^$' -bench AuditTenantPages -benchtime 300x ./internal/store/sqlite/
func BenchmarkAuditTenantPages(b *testing.B) {
	const table = `CREATE TABLE audit (seq INTEGER PRIMARY KEY, time INTEGER NOT NULL, request TEXT NOT NULL,
	event TEXT NOT NULL, prev_hash BLOB NOT NULL, hash BLOB NOT NULL);`
	const index = `CREATE INDEX audit_tenant ON audit (event ->> 'tenant', seq) WHERE event ->> 'tenant' IS NOT NULL;`
	for _, ix := range []bool{false, true} {
		for _, tenants := range []int{0, 1, 8} {
			b.Run(fmt.Sprintf("index=%v/tenants=%d", ix, tenants), func(b *testing.B) {
				ddl := table
				if ix {
					ddl += index
				}
				auditPages(b, ddl, tenants, 40)
			})
		}
	}
}

func auditPages(b *testing.B, ddl string, tenants, batch int) {
	path := filepath.Join(b.TempDir(), "a.db")
	db, err := openPool(path, false, "journal_mode=WAL", "synchronous=NORMAL", "wal_autocheckpoint=0")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(ddl); err != nil {
		b.Fatal(err)
	}
	ins, err := db.Prepare(positional(`INSERT INTO audit (seq, time, request, event, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6)`))
	if err != nil {
		b.Fatal(err)
	}
	hash := []byte(strings.Repeat("h", 32))
	seq := int64(0)
	commit := func() {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		for range batch {
			seq++
			tenant := ""
			if tenants > 0 {
				tenant = `"tenant":"tenant-` + strconv.Itoa(int(seq)%tenants) + `",`
			}
			ev := fmt.Sprintf(`{"time":"2026-12-06T14:00:00.000000000Z","request":"req-%d",%s"principal":"alice","agent":"api","kind":"tool","name":"reserve","call_id":"c%d","decision":"completed","args":{"seat":"4A"},"result":"{\"seat\":\"4A\"}","latency":126346}`, seq/7, tenant, seq)
			if _, err := tx.Stmt(ins).Exec(seq, seq, "req-"+strconv.FormatInt(seq/7, 10), ev, hash, hash); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	for range 20000 / batch {
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
	b.ReportMetric(float64(wal()-from)/float64(b.N), "pages/commit")
}

// BenchmarkAuditTenantPage reads a tenant operator's page (its 3 events,
// older than 20,000 of another tenant's) with MatchAudit's query: "bounded"
// as before audit_tenant (NOT INDEXED: the primary key's range of the
// 10,000 records before the head, each event's tenant read; the page ends
// short, its events further back), "indexed" with it (the 3 found). Side
// by side in one run.
//
//	go test -run '^$' -bench 'AuditTenantPage$' -benchtime 200x ./internal/store/sqlite/
func BenchmarkAuditTenantPage(b *testing.B) {
	s, err := Open(b.Context(), b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var recs []*store.AuditRecord
	for seq := int64(1); seq <= 20003; seq++ {
		tenant := "globex"
		if seq <= 3 {
			tenant = "acme"
		}
		recs = append(recs, &store.AuditRecord{Seq: seq, Time: time.Now(), Request: fmt.Sprint("r", seq/7), PrevHash: []byte{0}, Hash: []byte{0},
			Data: fmt.Appendf(nil, `{"request":"r%d","tenant":%q,"principal":"alice","agent":"api","kind":"tool","name":"reserve","call_id":"c%d","decision":"completed","args":{"seat":"4A"},"result":"{\"seat\":\"4A\"}","latency":126346}`, seq/7, tenant, seq)})
	}
	if err := s.AppendAudit(b.Context(), recs, nil); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name, from string
		m          store.AuditMatch
		want       int
	}{
		{"bounded", "FROM audit NOT INDEXED ", store.AuditMatch{Tenant: "acme", After: 20003 - 10000}, 0},
		{"indexed", "FROM audit ", store.AuditMatch{Tenant: "acme"}, 3},
	} {
		b.Run(c.name, func(b *testing.B) {
			q, args := dialect.MatchAuditQuery(c.m, 0, 100)
			for b.Loop() {
				rows, err := s.r.QueryContext(b.Context(), "SELECT seq, event "+c.from+q, args...)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for rows.Next() {
					n++
				}
				rows.Close()
				if n != c.want {
					b.Fatalf("%d records, want %d", n, c.want)
				}
			}
		})
	}
}
