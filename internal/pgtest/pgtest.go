// Package pgtest starts a throwaway PostgreSQL cluster for tests: initdb
// and pg_ctl (as the postgres user when the tests run as root, since
// PostgreSQL refuses to run as root) in a temporary folder, listening on a
// free loopback port only. One cluster serves a test binary; each caller
// of [Database] gets a database of its own in it.
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestX(t *testing.T) {
//		url := pgtest.Database(t) // postgres://reach@127.0.0.1:PORT/t_N?sslmode=disable
//		...
//	}
//
// Without PostgreSQL's binaries a test skips, saying why, unless REACH_CI
// is set (as `make test` does): there a missing cluster fails the test, so
// that CI never passes by skipping. REACH_PG_BIN names the folder of
// initdb and pg_ctl when they are neither on PATH nor in Debian's place.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach/internal/testport"
)

// Cluster is a running throwaway cluster.
type Cluster struct {
	dir  string // its data folder (and socket folder)
	bin  string // the folder of initdb and pg_ctl
	port int
	cred *syscall.Credential // the postgres user's, when running as root
}

// Addr is the cluster's host:port on loopback.
func (c *Cluster) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)) }

// URL is a connection URL for database db as the superuser reach.
func (c *Cluster) URL(db string) string {
	return "postgres://reach@" + c.Addr() + "/" + db + "?sslmode=disable"
}

var (
	once     sync.Once
	shared   *Cluster
	startErr error
	dbSeq    atomic.Int64

	// Under Main, the binary's clusters are copies of one initdb'd data
	// folder (template), made on the first Start and removed by Main: a
	// copy takes a fraction of initdb's time, and a package whose tests
	// start a cluster each started dozens.
	templated atomic.Bool
	tmplOnce  sync.Once
	tmplDir   string
	tmplErr   error
)

// Main runs the tests of a package that uses Database and stops the
// cluster afterwards, if one was started. Call it from TestMain. Under
// it, the clusters that Start (and Own) start are copies of one initdb'd
// folder, removed at the end.
func Main(m *testing.M) int {
	templated.Store(true)
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	if tmplDir != "" {
		os.RemoveAll(tmplDir)
	}
	return code
}

// Shared returns the test binary's cluster, starting it on first use. It
// skips t (or fails it under REACH_CI) when no cluster can be started.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	once.Do(func() { shared, startErr = Start() })
	if startErr != nil {
		if os.Getenv("REACH_CI") != "" {
			t.Fatalf("PostgreSQL is needed and could not be started: %v", startErr)
		}
		t.Skipf("PostgreSQL could not be started (%v); install PostgreSQL 15 (apt-get install postgresql) to run this test", startErr)
	}
	return shared
}

// Own starts a cluster of t's own, stopped when t ends: for a test that
// restarts its server, or runs in a binary that cannot call Main. It skips
// t (or fails it under REACH_CI) when no cluster can be started.
func Own(t testing.TB) *Cluster {
	t.Helper()
	c, err := Start()
	if err != nil {
		if os.Getenv("REACH_CI") != "" {
			t.Fatalf("PostgreSQL is needed and could not be started: %v", err)
		}
		t.Skipf("PostgreSQL could not be started (%v); install PostgreSQL 15 (apt-get install postgresql) to run this test", err)
	}
	t.Cleanup(c.Stop)
	return c
}

// CreateDatabase creates database name in c and returns its URL.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return c.URL(name), nil
}

// Database creates a fresh database in the shared cluster and returns its
// URL; it is dropped when t ends.
func Database(t testing.TB) string {
	t.Helper()
	c := Shared(t)
	name := "t_" + strconv.FormatInt(dbSeq.Add(1), 10)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatalf("connecting to the test cluster: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return c.URL(name)
}

// Start initializes and starts a new cluster in a temporary folder.
func Start() (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin}
	c.dir, err = os.MkdirTemp("", "reach-pg-")
	if err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(c.dir)
			return nil, fmt.Errorf("running as root, and there is no postgres user to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(c.dir, uid, gid); err != nil {
			os.RemoveAll(c.dir)
			return nil, err
		}
	}
	data := filepath.Join(c.dir, "data")
	if templated.Load() {
		tmplOnce.Do(func() { tmplDir, tmplErr = c.template() })
		err := tmplErr
		if err == nil {
			err = copyTree(filepath.Join(tmplDir, "data"), data, c.cred)
		}
		if err != nil {
			os.RemoveAll(c.dir)
			return nil, err
		}
	} else if err := c.initdb(data); err != nil {
		os.RemoveAll(c.dir)
		return nil, err
	}
	for range 5 { // a port free a moment ago may be taken by the time the server binds it
		c.port, err = freePort()
		if err != nil {
			break
		}
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", c.port, c.dir)
		var out []byte
		out, err = c.run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60", "start")
		if err == nil {
			return c, nil
		}
		err = fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	logs, _ := os.ReadFile(filepath.Join(c.dir, "log"))
	os.RemoveAll(c.dir)
	return nil, fmt.Errorf("%w; its log:\n%s", err, logs)
}

// initdb makes a cluster's data folder.
func (c *Cluster) initdb(data string) error {
	if out, err := c.run("initdb", "-D", data, "-U", "reach", "--auth=trust", "--encoding=UTF8", "--no-sync", "--no-instructions"); err != nil {
		return fmt.Errorf("initdb: %v: %s", err, out)
	}
	return nil
}

// template makes the folder whose data folder Start copies under Main: a
// folder like c's, initdb'd, never started.
func (c *Cluster) template() (string, error) {
	dir, err := os.MkdirTemp("", "reach-pg-template-")
	if err != nil {
		return "", err
	}
	if c.cred != nil {
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	t := &Cluster{dir: dir, bin: c.bin, cred: c.cred}
	if err := t.initdb(filepath.Join(dir, "data")); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// copyTree copies the data folder from to the new folder to, with each
// file's and folder's mode, owned by cred's user when it is set (as
// initdb would have made it).
func copyTree(from, to string, cred *syscall.Credential) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(dst, info.Mode().Perm()); err != nil {
				return err
			}
		case d.Type().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if err := os.WriteFile(dst, b, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("copying the cluster template: %s is neither a file nor a folder", path)
		}
		if err := os.Chmod(dst, info.Mode().Perm()); err != nil { // past the umask
			return err
		}
		if cred != nil {
			return os.Lchown(dst, int(cred.Uid), int(cred.Gid))
		}
		return nil
	})
}

// Stop stops the cluster at once and removes its folder.
func (c *Cluster) Stop() {
	c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "stop")
	os.RemoveAll(c.dir)
}

// Restart stops the cluster at once (as a crash would) and starts it again
// on the same port, for tests of what survives a database restart.
func (c *Cluster) Restart() error { return c.RestartMode("immediate") }

// RestartMode is Restart with pg_ctl's shutdown mode: "fast" (sessions
// ended, a checkpoint written) or "immediate" (as a crash).
func (c *Cluster) RestartMode(mode string) error {
	if err := c.Halt(mode); err != nil {
		return err
	}
	return c.Resume()
}

// Halt stops the server (pg_ctl stop -m mode) and leaves it stopped, its
// folder kept, until Resume: for tests of an outage longer than a restart.
func (c *Cluster) Halt(mode string) error {
	if out, err := c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", mode, "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// Resume starts a server Halt stopped, on the same port.
func (c *Cluster) Resume() error {
	data := filepath.Join(c.dir, "data")
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", c.port, c.dir)
	if out, err := c.run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60", "start"); err != nil {
		return fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	return nil
}

func (c *Cluster) run(tool string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(c.bin, tool), args...)
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=" + c.bin + ":/usr/bin:/bin", "LC_ALL=C"}
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd.CombinedOutput()
}

// binDir finds initdb and pg_ctl: in $REACH_PG_BIN if it is set, else on
// PATH, or in Debian's /usr/lib/postgresql/VERSION/bin (the newest
// version).
func binDir() (string, error) {
	if d := os.Getenv("REACH_PG_BIN"); d != "" {
		for _, tool := range []string{"initdb", "pg_ctl"} {
			if _, err := os.Stat(filepath.Join(d, tool)); err != nil {
				return "", fmt.Errorf("REACH_PG_BIN=%s: %w", d, err)
			}
		}
		return d, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("initdb and pg_ctl were not found on PATH or in /usr/lib/postgresql/*/bin")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// freePort is a loopback port for the cluster, which binds it again on
// each Resume and Restart: below the kernel's ephemeral range, so that no
// other listener or outbound connection takes it while the cluster is
// halted (testport).
func freePort() (int, error) { return testport.Free() }

// CPU returns the CPU time (user and system) the cluster's processes have
// used: the postmaster, its live children (each connection's backend, the
// WAL writer, the checkpointer) and the children that ended. For
// benchmarks that count the server's share of a call; Linux only (/proc).
func (c *Cluster) CPU() (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "data", "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0, fmt.Errorf("postmaster.pid: %w", err)
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // ended meanwhile
		}
		// Fields after the command (which may hold spaces), from field 3.
		i := strings.LastIndexByte(string(st), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(st[i+1:]))
		if len(f) < 15 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		if pid != pm && ppid != pm {
			continue
		}
		n := 2 // utime, stime (fields 14, 15)
		if pid == pm {
			n = 4 // and cutime, cstime: the children that ended
		}
		for _, v := range f[11 : 11+n] {
			t, _ := strconv.ParseInt(v, 10, 64)
			ticks += t
		}
	}
	return time.Duration(ticks) * time.Second / 100, nil // USER_HZ is 100 on Linux
}
