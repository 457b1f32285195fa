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
// migrated when the store is opened (the schema_migrations table). One
// writer goroutine commits whatever is queued in one transaction (group
// commit). The WAL is copied into the database by a goroutine of its own,
// not by the writer at commit time, and the audit log's records are indexed
// by request in passes rather than at every commit: see docs/AUDIT.md.
package sqlite
