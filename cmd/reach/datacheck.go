package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/gateway"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// dataWarning says why reach serve with this configuration would not start
// on its data folder, as validate finds it now, or "" when it would: the
// folder (or, when it does not exist yet, the nearest folder above it,
// where serve would create it) is not one reach may write, or another
// reach holds it. A warning, not an error, as for a listen address in use:
// a configuration is often checked where it is built, not where it serves
// (a container's /data is a volume mounted at run time). A configuration
// whose state is in PostgreSQL (store:) has no data folder to check.
func dataWarning(cfg *config.Config) string {
	if cfg.Postgres() {
		return ""
	}
	dir := cfg.DataDir()
	at, exists, err := nearestFolder(dir)
	if err != nil {
		return fmt.Sprintf("data: reach serve could not create its data folder %s: %v: %s", dir, err, config.DataDirHint)
	}
	// A file made and removed at once says what serve's writes would meet
	// (permissions, a read-only file system) whoever runs it, root too.
	f, err := os.CreateTemp(at, ".reach-validate-*")
	if err != nil {
		if exists {
			return fmt.Sprintf("data: reach serve could not write its data folder %s: %v: %s", dir, unwrapPath(err), config.DataDirHint)
		}
		return fmt.Sprintf("data: reach serve could not create its data folder %s in %s: %v: %s", dir, at, unwrapPath(err), config.DataDirHint)
	}
	f.Close()
	os.Remove(f.Name())
	if !exists {
		return ""
	}
	if err := dataFileProblem(dir); err != nil {
		return "data: reach serve would not start: " + err.Error()
	}
	if held, pid := dataFolderHeld(dir); held {
		holder := ""
		if pid > 0 {
			holder = fmt.Sprintf(" (pid %d)", pid)
		}
		return fmt.Sprintf("data: %s is in use now by another reach%s: reach serve with this configuration does not start until that one stops; stop it, or give this one a data folder of its own (data:, or reach serve --data); gateways that share their state share a PostgreSQL store (store:)", dir, holder)
	}
	return ""
}

// nearestFolder returns dir when it exists, else the nearest folder above
// it that does (where serve's MkdirAll would begin), and whether dir
// itself exists. A file in the way, dir itself or a folder above it, is an
// error: no folder can be made there.
func nearestFolder(dir string) (at string, exists bool, err error) {
	p := filepath.Clean(dir)
	for first := true; ; first = false {
		st, err := os.Stat(p)
		switch {
		case err == nil && st.IsDir():
			return p, first, nil
		case err == nil:
			return "", false, fmt.Errorf("%s is a file, not a folder", p)
		case !errors.Is(err, os.ErrNotExist):
			return "", false, unwrapPath(err)
		}
		up := filepath.Dir(p)
		if up == p {
			return "", false, unwrapPath(err)
		}
		p = up
	}
}

// unwrapPath leaves out the operation and path of a *PathError, which the
// message that carries it names already.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return pe.Err
	}
	return err
}

// pidOf reads the process id a gateway writes into its reach.lock (0 when
// there is none).
func pidOf(lockFile string) int {
	b, err := os.ReadFile(lockFile)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// dataFileProblem returns why a gateway run by this process could not
// write a file that an earlier run left in the data folder dir, or nil: the
// lock, the store and its journals, the kept idempotency records and stops.
// A folder made by a reach run as another user (sudo reach serve once, then
// reach serve) is often writable while its files are not; the lock's
// "permission denied" then said to give reach a folder it may write, and
// the store's "readonly database" said reach would go on once it was
// writable, as the running gateway does, while the start had ended.
func dataFileProblem(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // the folder's own error is the lock's and the store's to tell
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !reachDataFile(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil {
			f.Close()
			continue
		}
		if !errors.Is(err, os.ErrPermission) {
			continue
		}
		what := "make it writable by this user (chmod u+w), or run reach as a user that may write it"
		if owner, ok := fileOwner(path); ok && owner != os.Geteuid() {
			what = fmt.Sprintf("it belongs to uid %d and reach runs as uid %d: a reach run as that user (with sudo, say) made it; run reach as that user, or give the folder and its files to this one (chown -R %d %s)", owner, os.Geteuid(), os.Geteuid(), dir)
		}
		return fmt.Errorf("the data folder %s holds %s, which reach may not write (%v): %s", dir, e.Name(), unwrapPath(err), what)
	}
	return nil
}

// reachDataFile says whether name is one of the files a gateway writes in
// its data folder (not keys.json, which reach keys writes and serve reads).
func reachDataFile(name string) bool {
	for _, p := range []string{"reach.lock", sqlite.DefaultFile, store.KeptFile, "." + store.KeptFile, gateway.StopsFile, "." + gateway.StopsFile} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
