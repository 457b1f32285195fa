//go:build cgo

package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// Driver names the SQLite library the store runs on.
const Driver = "sqlite3 (C, cgo)"

// openPool opens a pool of connections to the database file at path, each
// connection setting pragmas (name=value) when it opens; immediate makes
// every transaction BEGIN IMMEDIATE (the writer's).
//
// Each connection is opened without SQLite's connection mutex
// (SQLITE_OPEN_NOMUTEX, "multi-thread" mode): database/sql hands a
// connection to one goroutine at a time, and the writer's own connection
// is the writer's alone, so the mutex that the default ("serialized")
// mode locks and unlocks around every call into the library (each step,
// bind, reset and column read: some 40 a write call) guards nothing.
func openPool(path string, immediate bool, pragmas ...string) (*sql.DB, error) {
	dsn := path + "?_mutex=no"
	if immediate {
		dsn += "&_txlock=immediate"
	}
	return sql.OpenDB(&connector{dsn: dsn, pragmas: pragmas}), nil
}

type connector struct {
	dsn     string
	pragmas []string
}

var cDriver = &sqlite3.SQLiteDriver{}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := cDriver.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	for _, p := range c.pragmas {
		if _, err := conn.(*sqlite3.SQLiteConn).Exec("PRAGMA "+p, nil); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

func (c *connector) Driver() driver.Driver { return cDriver }
