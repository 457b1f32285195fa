//go:build unix

package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A data folder that an earlier reach run as another user made (sudo reach
// serve once, then reach serve): the folder writable, its files not. reach
// serve said "locking the data folder: open .../reach.lock: permission
// denied: give reach a folder it may write" (the folder was one), and with
// the lock writable, "attempt to write a readonly database (... reach goes
// on once it is, without a restart)" while it had ended; reach validate
// said ok. Now serve refuses to start naming the file, who owns it and what
// to do, and validate warns the same.
func TestServeNamesDataFilesOfAnotherUser(t *testing.T) {
	root := os.Geteuid() == 0
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	addr := freeAddr(t)
	cfg := filepath.Join(dir, "reach.yaml")
	if err := os.WriteFile(cfg, []byte("listen: "+addr+"\ndata: ./data\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// A first run, as the test's user, makes the folder's files, and a
	// key.
	first := startReach(t, cfg, addr, data)
	first.Process.Signal(os.Interrupt)
	first.Wait()
	if _, err := runCLI(t, "keys", "create", "--principal", "alice", "--data", data); err != nil {
		t.Fatal(err)
	}

	bin, as := exe(t), (*syscall.Credential)(nil)
	if root {
		// Root writes any file: the second run is another user's, as
		// after a sudo. It needs a copy of this binary it may run, in
		// folders it may enter.
		as = &syscall.Credential{Uid: 65534, Gid: 65534}
		bin = filepath.Join(dir, "reach.test")
		copyFile(t, exe(t), bin, 0o755)
		for _, d := range []string{filepath.Dir(dir), dir, data} {
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		// The same user, the files read-only to it.
		entries, _ := os.ReadDir(data)
		for _, e := range entries {
			os.Chmod(filepath.Join(data, e.Name()), 0o400)
		}
	}
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "REACH_AS_CLI=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: as}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}

	want := []string{"the data folder " + data + " holds ", "which reach may not write"}
	if root {
		want = append(want, "belongs to uid "+strconv.Itoa(os.Geteuid()), "reach runs as uid 65534", "chown -R 65534 "+data)
	} else {
		want = append(want, "chmod u+w")
	}
	_, stderr, err := run("serve", "--config", cfg)
	if err == nil {
		t.Fatalf("reach serve on another user's files started; want it refused")
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("reach serve on another user's files said:\n%s\nwant %q", stderr, w)
		}
	}
	if strings.Contains(stderr, "without a restart") || strings.Contains(stderr, "give reach a folder it may write") {
		t.Errorf("reach serve said:\n%s\nwant no promise to go on, nor a folder it has", stderr)
	}

	stdout, stderr, err := run("validate", "--offline", "--config", cfg)
	if err != nil {
		t.Fatalf("validate: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "warning: data: reach serve would not start: ") {
		t.Errorf("validate on another user's files:\n%s\nwant a warning", stdout)
	}
	for _, w := range want {
		if !strings.Contains(stdout, w) {
			t.Errorf("validate on another user's files:\n%s\nwant %q", stdout, w)
		}
	}

	// The keys file another user's keys create made: reach keys says
	// what to do, not "permission denied" alone.
	if root {
		_, stderr, err := run("keys", "list", "--data", data)
		if err == nil || !strings.Contains(stderr, "keys.json") || !strings.Contains(stderr, "chown -R") {
			t.Errorf("keys list as another user: %v\n%s\nwant it to name keys.json and what to do", err, stderr)
		}
	}

	// Its files its own again, the second user's serve starts.
	if root {
		entries, _ := os.ReadDir(data)
		for _, e := range entries {
			os.Chown(filepath.Join(data, e.Name()), 65534, 65534)
		}
	} else {
		entries, _ := os.ReadDir(data)
		for _, e := range entries {
			os.Chmod(filepath.Join(data, e.Name()), 0o600)
		}
	}
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "REACH_AS_CLI=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: as}
	startServeCmd(t, cmd, addr)
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
