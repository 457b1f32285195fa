// Package sqlite is the embedded store.Store, the default: everything in
// one file, reach.db in the data folder.
//
//	st, err := sqlite.Open(ctx, ".reach", nil)
//	if err != nil { ... }
//	defer st.Close()
//
// [Open] keeps the database in WAL mode: synchronous NORMAL by default (a
// commit survives a crash of the process), FULL as an option (it also
// survives the machine's), a busy timeout for other processes' locks, one
// connection for every write and a small pool for reads. The schema is
// migrated when the store is opened (the schema_migrations table). The
// operations and the writer goroutine, which commits whatever is queued in
// one transaction (group commit), are internal/store/sqlcore's, the same as
// PostgreSQL's; this package is the engine under them (a batch that runs
// each statement as it is added, the SQL where SQLite's differs). The WAL is copied into the database by a goroutine of its own,
// not by the writer at commit time, and the audit log's records are indexed
// by request in passes rather than at every commit: see docs/AUDIT.md.
package sqlite
