package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{32, "the tasks model turns handed: used, and the sub-request begun", `
-- A handed task's record says whether a sub-agent given the task has
-- joined it (used, store.HandedTasks.ClaimHandedTask) and the sub-request
-- begun from it (sub), for every instance alike: a later sub-agent given
-- the same task joins that sub-request, or is refused a guess, as on one
-- instance, and the turn's conversation going on ends it wherever it runs.
-- IF NOT EXISTS: run again (its record lost), it changes nothing.
ALTER TABLE handed_tasks ADD COLUMN IF NOT EXISTS used INTEGER NOT NULL DEFAULT 0;
ALTER TABLE handed_tasks ADD COLUMN IF NOT EXISTS sub TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS handed_tasks_frame ON handed_tasks (request, frame);
`})
}
