package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{34, "the approvals whose last action is not audited yet, indexed; the audit events that happen once, keyed", `
-- An approval whose last action is stored and not yet audited carries a
-- mark in its data (package approval); a restart, and every adoption of a
-- dead instance's actions, reads the marked rows however old. This index
-- holds those rows only (its predicate is the query's condition, word for
-- word): before, the table was read through for them.
CREATE INDEX IF NOT EXISTS approvals_unaudited ON approvals (created DESC, id DESC) WHERE data LIKE '%"unaudited":true%';

-- The keys of the audit events that happen once whoever records them (an
-- approval's action, which a revived instance and the survivor that took
-- it over may both audit): an append looks its records' keys up under the
-- head's lock and appends none whose key is here; the key refuses a
-- second record all the same.
CREATE TABLE IF NOT EXISTS audit_once (
	once TEXT PRIMARY KEY,
	seq  BIGINT NOT NULL
);
`})
}
