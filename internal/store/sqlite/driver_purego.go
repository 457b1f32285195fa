//go:build !cgo

package sqlite

import (
	"database/sql"
	"strings"

	_ "modernc.org/sqlite" // the driver "sqlite"
)

// Driver names the SQLite library the store runs on.
const Driver = "modernc.org/sqlite (pure Go)"

// openPool opens a pool of connections to the database file at path, each
// connection setting pragmas (name=value) when it opens; immediate makes
// every transaction BEGIN IMMEDIATE (the writer's).
func openPool(path string, immediate bool, pragmas ...string) (*sql.DB, error) {
	var b strings.Builder
	b.WriteString(path)
	for i, p := range pragmas {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		name, value, _ := strings.Cut(p, "=")
		b.WriteString("_pragma=" + name + "(" + value + ")")
	}
	if immediate {
		if len(pragmas) == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString("_txlock=immediate")
	}
	return sql.Open("sqlite", b.String())
}
