package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentreach/reach/internal/config"
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
