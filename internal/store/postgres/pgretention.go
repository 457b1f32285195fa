package postgres

import "github.com/agentreach/reach/internal/store"

func init() {
	pgMigrations = append(pgMigrations, migration{11, "the retention sweep finds final tasks by their age", `
-- The retention sweep (sqlcore/retention.go) removes the final tasks
-- oldest first: the index tasks_owner leads with the agent.
CREATE INDEX tasks_created ON tasks (created);
`}, migration{12, "the retention sweep keeps the requests of tasks not final", `
-- The retention sweep (sqlcore/retention.go) keeps an ended request that
-- an A2A task not yet final names: the index finds such tasks by their
-- request, for each request a batch removes.
CREATE INDEX tasks_request ON tasks (request);
`})
}

var _ store.Retention = (*Store)(nil)
