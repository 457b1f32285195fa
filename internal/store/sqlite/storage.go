package sqlite

import (
	"fmt"
	"strings"
)

// storageError adds to err, an error of SQLite, what an operator must do
// when it says the disk is full or the database cannot be written, so
// that the refusals and logs that carry it say so. SQLite's own messages
// (sqlite3_errstr, the same through either driver) tell them apart.
func storageError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "database or disk is full"):
		return fmt.Errorf("%w (the data folder's disk is full: free space on it; reach goes on once there is room, without a restart)", err)
	case strings.Contains(msg, "readonly database"), strings.Contains(msg, "read-only file system"):
		return fmt.Errorf("%w (the data folder cannot be written: make it writable; reach goes on once it is, without a restart)", err)
	}
	return err
}
