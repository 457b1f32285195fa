package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{27, "the audit log's events found by their tenant", `
-- A tenant's operator's page of the audit log (GET /v1/audit, the UI's
-- audit page) reads its tenant's newest events from this index, however
-- many of other tenants' came after them, instead of reading back through
-- theirs. Partial: an event of no tenant (its JSON has no "tenant") has no
-- entry. Building it reads the whole log once, holding off appends.
-- An operator may build it ahead, as the last statement below with
-- CONCURRENTLY (appends go on meanwhile): it is kept, unless that build
-- failed and left it invalid, which is dropped and built here.
DO $$ BEGIN
	IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('audit_tenant') AND NOT indisvalid) THEN
		DROP INDEX audit_tenant;
	END IF;
END $$;
CREATE INDEX IF NOT EXISTS audit_tenant ON audit ((event ->> 'tenant'), seq) WHERE (event ->> 'tenant') IS NOT NULL;
`})
}
