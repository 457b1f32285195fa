package postgres

import "github.com/agentreach/reach/internal/store"

func init() {
	pgMigrations = append(pgMigrations, migration{11, "the retention sweep finds final tasks by their age", `
-- The retention sweep (sqlcore/retention.go) removes the final tasks
-- oldest first: the index tasks_owner leads with the agent.
CREATE INDEX tasks_created ON tasks (created);
`})
}

var _ store.Retention = (*Store)(nil)
