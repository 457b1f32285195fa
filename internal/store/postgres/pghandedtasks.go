package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{31, "the tasks model turns handed", `
-- The tool calls model turns chose, by the digest of each string they were
-- given (store.HandedTasks), so that a sub-agent the agent runs in its own
-- process, given one as its task, finds the turn that handed it on any
-- instance: the digest's principal and tenant, never the task. A record
-- lives until it expires, a principal keeps a bounded number, and each
-- write deletes those expired and those past the bound. IF NOT EXISTS:
-- run again (its record lost), it changes nothing.
CREATE TABLE IF NOT EXISTS handed_tasks (
	digest    TEXT NOT NULL,
	request   TEXT NOT NULL,
	principal TEXT NOT NULL DEFAULT '',
	tenant    TEXT NOT NULL DEFAULT '',
	frame     TEXT NOT NULL DEFAULT '',
	tool      TEXT NOT NULL DEFAULT '',
	stack     BYTEA,
	created   BIGINT NOT NULL,
	expires   BIGINT NOT NULL,
	PRIMARY KEY (digest, request)
);
CREATE INDEX IF NOT EXISTS handed_tasks_principal ON handed_tasks (principal, tenant, created);
CREATE INDEX IF NOT EXISTS handed_tasks_expires ON handed_tasks (expires);
`})
}
