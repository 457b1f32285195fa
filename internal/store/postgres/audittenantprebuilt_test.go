package postgres

import (
	"testing"

	"github.com/agentreach/reach/internal/pgtest"
)

// TestPostgresAuditTenantPrebuilt: an operator who builds audit_tenant
// ahead of the upgrade (CREATE INDEX CONCURRENTLY, which lets the running
// instances append to the log meanwhile) then starts the new binary: the
// migration to schema 27 finds the index and goes on. Before, it failed
// ("relation audit_tenant already exists") and the instance did not start,
// so the only way was the migration's own build, which holds off every
// instance's audit appends while it reads the whole log.
func TestPostgresAuditTenantPrebuilt(t *testing.T) {
	url := pgtest.Database(t)
	s := openPostgres(t, url)
	ctx := t.Context()
	if _, err := s.pool.Exec(ctx, `DROP INDEX audit_tenant; DELETE FROM schema_migrations WHERE version >= 27`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `CREATE INDEX CONCURRENTLY audit_tenant ON audit ((event ->> 'tenant'), seq) WHERE (event ->> 'tenant') IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	s2 := openPostgres(t, url)
	var n int
	if err := s2.pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE version >= 27`).Scan(&n); err != nil || n < 2 {
		t.Fatalf("migrations from 27 recorded: %d, %v; want 27 and those after it", n, err)
	}
	if err := s2.pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE indexname = 'audit_tenant'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("audit_tenant indexes: %d, %v; want the one built ahead", n, err)
	}

	// A build ahead that failed leaves the index invalid (not used by a
	// query): the migration drops it and builds it.
	if _, err := s.pool.Exec(ctx, `UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'audit_tenant'::regclass;
		DELETE FROM schema_migrations WHERE version >= 27`); err != nil {
		t.Fatal(err)
	}
	s3 := openPostgres(t, url)
	var valid bool
	if err := s3.pool.QueryRow(ctx, `SELECT indisvalid FROM pg_index WHERE indexrelid = 'audit_tenant'::regclass`).Scan(&valid); err != nil || !valid {
		t.Fatalf("audit_tenant after migrating over an invalid one: valid %v, %v; want built again", valid, err)
	}
}
