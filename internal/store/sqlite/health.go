package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ProbeEvery is how often a store that failed a write, or whose file may
// have gone, is looked at again (watch): a stat of its file each time, and
// one small write while its last write failed.
var ProbeEvery = 2 * time.Second

// probeTimeout bounds one probe write (the busy timeout aside).
const probeTimeout = 5 * time.Second

// failing reports whether err, an error of SQLite, says the store itself
// cannot be written or read (the disk is full, the database or its folder
// is read-only or gone, an I/O error, a damaged file), rather than a
// refusal of one write's own (a constraint, a value).
func failing(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, s := range []string{"database or disk is full", "readonly database", "read-only file system",
		"disk I/O error", "unable to open database file", "database disk image is malformed", "file is not a database"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// wrote1 records the outcome of a batch of the writer's, or of a probe:
// err nil (committed) clears a failure, a failing error (failing) is kept
// for Unready; others (one write's own) change nothing. It costs an atomic
// load on a commit while the store is well.
func (s *Store) wrote1(err error) {
	if err == nil {
		if s.fault.Load() != nil {
			s.fault.Store(nil)
		}
		return
	}
	if failing(err) {
		msg := storageError(err).Error()
		s.fault.Store(&msg)
	}
}

// Unready says why this store cannot be relied on now, for /readyz; ""
// while it can. Two things count: the outcome of the last write that
// reached the database (a batch of calls' records, or the probe that
// watch writes every ProbeEvery while it failed, so that a gateway that
// no traffic reaches comes back once there is room again), and whether
// the database file is still the one opened (a folder removed, or the
// file replaced, under a running gateway: SQLite goes on writing the
// removed file, which is lost when the process ends). Neither asks the
// database: an atomic load each.
func (s *Store) Unready() string {
	if p := s.gone.Load(); p != nil {
		return *p
	}
	if p := s.fault.Load(); p != nil {
		return "the store's last write failed: " + *p + "; calls that write are refused until a write succeeds"
	}
	return ""
}

// watch looks at the store every ProbeEvery until Close: whether its file
// is still the one opened, and, while its last write failed, whether a
// small write (a row of store_meta written and deleted in one transaction,
// on the checkpointer's connection) goes through now.
func (s *Store) watch() {
	defer close(s.watchDone)
	t := time.NewTicker(ProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.watchStop:
			return
		}
		s.checkFile()
		if s.fault.Load() != nil {
			s.wrote1(s.probe())
		}
	}
}

// checkFile marks the store gone once its database file is not the one it
// opened (removed, or replaced), and clears the mark if it is again.
func (s *Store) checkFile() {
	fi, err := os.Stat(s.path)
	switch {
	case err == nil && os.SameFile(fi, s.ident):
		if s.gone.Load() != nil {
			s.gone.Store(nil)
		}
	case s.gone.Load() == nil:
		// Its name only: /readyz answers without credentials; the log,
		// the operator's, has the path.
		why := fmt.Sprintf("the database file %s in the data folder was removed or replaced under the running gateway: what reach writes now goes to the removed file and is lost when it stops; stop sending it traffic, put the folder back, and restart reach serve (the log says where)", filepath.Base(s.path))
		s.gone.Store(&why)
		s.log.Error("store: the database file is gone", "path", s.path, "err", fileState(err))
	}
}

func fileState(err error) string {
	if err != nil {
		return err.Error()
	}
	return "another file is at its path"
}

// probe writes and deletes one row in one transaction, and returns why it
// failed.
func (s *Store) probe() error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	tx, err := s.ck.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO store_meta (key, value) VALUES ('probe', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, time.Now().UnixNano()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM store_meta WHERE key = 'probe'`); err != nil {
		return err
	}
	return tx.Commit()
}
