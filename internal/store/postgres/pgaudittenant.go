package postgres

func init() {
	pgMigrations = append(pgMigrations, migration{27, "the audit log's events found by their tenant", `
-- A tenant's operator's page of the audit log (GET /v1/audit, the UI's
-- audit page) reads its tenant's newest events from this index, however
-- many of other tenants' came after them, instead of reading back through
-- theirs. Partial: an event of no tenant (its JSON has no "tenant") has no
-- entry. Building it reads the whole log once, holding off appends.
CREATE INDEX audit_tenant ON audit ((event ->> 'tenant'), seq) WHERE (event ->> 'tenant') IS NOT NULL;
`})
}
