package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{13, "who took a dead letter", `
-- The life that took a dead letter (store.DeadLetter.Taker, an owner of
-- instances) and the updated its take wrote: the taker holds only while
-- no later write changed the row (an instance of an earlier version
-- moves updated alone). The recovery of a dead life gives back at once
-- the dead letters it took; one taken with no taker recorded stays taken
-- for ten minutes, as before.
ALTER TABLE dead_letters ADD COLUMN taker TEXT NOT NULL DEFAULT '',
	ADD COLUMN taken BIGINT NOT NULL DEFAULT 0;
`})
}
