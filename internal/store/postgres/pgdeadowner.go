package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{30, "a dead letter keeps its owner", `
-- The owner of the root of the request whose undo failed (principal and
-- tenant), kept with its dead letter when it is added: a tenant's
-- operator sees and acts on the dead letters of its tenant by them, after
-- the request is gone too (retention keeps a settled dead letter longer
-- than its request, and a later request of another tenant may take its
-- id). A dead letter added before has neither (''): it is scoped by its
-- request, as before, if that began before it. IF NOT EXISTS: run again
-- (its record lost), it changes nothing.
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS principal TEXT NOT NULL DEFAULT '',
	ADD COLUMN IF NOT EXISTS tenant TEXT NOT NULL DEFAULT '';
`})
}
