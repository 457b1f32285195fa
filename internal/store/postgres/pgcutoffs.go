package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{15, "writes cut off before their answer was delivered", `
-- The writes cut off before their answer was delivered (reach.CutOffStore),
-- by the digest of their owner, tool and arguments, until they expire:
-- the retry of one that reaches another instance, or the next life, is
-- caught there. A small table: each write of it deletes the expired rows.
CREATE TABLE cut_offs (
	key      TEXT PRIMARY KEY,
	tool     TEXT NOT NULL,
	root     TEXT NOT NULL DEFAULT '',
	request  TEXT NOT NULL,
	call_id  TEXT NOT NULL,
	began    BIGINT NOT NULL DEFAULT 0,
	at       BIGINT NOT NULL,
	restart  BIGINT NOT NULL DEFAULT 0,
	stopped  TEXT NOT NULL DEFAULT '',
	expires  BIGINT NOT NULL
);
CREATE INDEX cut_offs_expires ON cut_offs (expires);
`})
}
