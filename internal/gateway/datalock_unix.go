//go:build unix

package gateway

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentreach/reach/internal/config"
)

// lockDataDir takes the data folder for this process: an exclusive lock on
// its reach.lock, which the kernel lets go when the process ends, however
// it ends. A second gateway on the folder is refused: at its start it
// would take the first one's running requests for ones a restart
// interrupted, mark them so in the store and run their undos.
func lockDataDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, dataLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking the data folder: %w: %s", err, config.DataDirHint)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = fmt.Sprintf(" (pid %d)", pid)
			}
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("the data folder %s is in use by another reach%s: stop that one, or give this one a data folder of its own (data: in its configuration, or reach serve --data; reach stdio takes no --data); gateways that share their state share a PostgreSQL store (store:, docs/INSTANCES.md)", dir, holder)
		}
		return nil, fmt.Errorf("locking the data folder %s: %w", dir, err)
	}
	// Who holds it, for the next one's error; the lock does not depend on it.
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { f.Close() }, nil
}
