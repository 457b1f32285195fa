package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{23, "the entity keys a checkpointed write moves on", `
-- The keys, in the entities table, of the entities a checkpointed call
-- writes (store.Frame.Entities), as a JSON array: plain names, and
-- 'sha256:' digests of names made from a secret, never the secret. The
-- recovery of a call cut off while it may have run moves them on, as the
-- call would have: its masked arguments cannot name an entity named from
-- a secret. NULL for a checkpoint written before: its arguments name them.
ALTER TABLE frames ADD COLUMN entities TEXT;
`})
}
