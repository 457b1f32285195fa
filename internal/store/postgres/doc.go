// Package postgres is the store.Store on a PostgreSQL server, for several
// gateway instances that share one control plane (store:
// postgres://USER@HOST:PORT/DB?sslmode=..., issue 17).
//
//	st, err := postgres.Open(ctx, "postgres://reach@db:5432/reach?sslmode=verify-full", nil)
//	if err != nil { ... }
//	defer st.Close()
//
// The operations and the group-commit writer are internal/store/sqlcore's,
// the same as SQLite's; this package is the engine under them (a batch
// sent as one pipeline, the SQL where PostgreSQL's differs: functions of
// the schema and CTEs that do in one statement what SQLite does in two).
// Open migrates the schema (versioned steps under an advisory lock, so
// that instances starting together migrate once) unless Options.NoMigrate.
// Besides the store.Store, it keeps what the instances share and
// internal/cluster uses: the lives of instances (heartbeats), the join and
// leave of a request, stops with LISTEN/NOTIFY, admissions under the
// ledger's lock, frames found by id, and the work of dead instances,
// claimed with SKIP LOCKED. See docs/STATE.md.
package postgres
