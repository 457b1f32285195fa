package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{34, "the approvals whose last action is not audited yet, indexed", `
-- An approval whose last action is stored and not yet audited carries a
-- mark in its data (package approval); a restart, and every adoption of a
-- dead instance's actions, reads the marked rows however old. This index
-- holds those rows only (its predicate is the query's condition, word for
-- word): before, the table was read through for them.
CREATE INDEX IF NOT EXISTS approvals_unaudited ON approvals (created DESC, id DESC) WHERE data LIKE '%"unaudited":true%';
`})
}
