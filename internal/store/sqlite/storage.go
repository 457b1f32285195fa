package sqlite

import (
	"strings"

	"github.com/agentreach/reach/internal/fault"
)

// storageError adds to err, an error of SQLite, what an operator must do
// when it says the disk is full or the database cannot be written, so
// that the logs that carry it say so, and the refusals, which tell the
// hint (fault.HintOf) and not SQLite's text. SQLite's own messages
// (sqlite3_errstr, the same through either driver) tell them apart.
func storageError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "database or disk is full"):
		return &fault.Hinted{Err: err, Hint: "the data folder's disk is full: free space on it; reach goes on once there is room, without a restart"}
	case strings.Contains(msg, "readonly database"), strings.Contains(msg, "read-only file system"):
		return &fault.Hinted{Err: err, Hint: "the data folder cannot be written: make it writable; reach goes on once it is, without a restart"}
	}
	return err
}
