package sqlite

import "github.com/agentreach/reach/internal/store"

// The retention sweep is sqlcore's (Core.SweepFinished), run by the
// writer: SQLite adds stFramesLower after its delete of frames.
var _ store.Retention = (*Store)(nil)
