package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// smallDisk mounts a tmpfs of size in a temporary folder and returns it,
// unmounted when t ends; it skips t where mounting is not allowed (not
// root, or a container without the capability).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "reach-chaos19-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		os.Remove(dir)
		t.Skipf("a small filesystem could not be mounted here (%v: %s)", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		exec.Command("umount", "-l", dir).Run()
		os.Remove(dir)
	})
	return dir
}

// fill writes a file in dir until the filesystem is full, and returns it.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := fh.Write(buf); err != nil {
			return p
		}
	}
}

// TestChaos19SQLiteDiskFull: the data folder's filesystem fills up under
// a gateway on SQLite. Writes are refused with a structured error that
// says what to do, and none that was refused ran; what was recorded before
// is still there; once space is back, calls run again without a restart.
func TestChaos19SQLiteDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("a process and a mounted filesystem: skipped in -short mode")
	}
	disk := smallDisk(t, "8m")
	up, upURL := sharedUpstream(t)
	data := filepath.Join(disk, "data")
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf("upstreams:\n  - {name: up, url: '%s'}\nbudgets:\n  default: {tool_calls: 100000, wall: 1h}\n", upURL))
	startReach(t, cfg, addr, data)
	base := "http://" + addr
	for i := range 20 {
		if r := callHTTP(t, base, fmt.Sprintf("before-%d", i), "c", "up__count", fmt.Sprintf(`{"key":"before-%d"}`, i), ""); r["status"] != "success" {
			t.Fatalf("call before the disk filled: %v", r)
		}
	}
	filler := fill(t, disk)
	outcomes := map[string]int{}
	for i := range 50 {
		key := fmt.Sprintf("full-%d", i)
		r := <-postCall(base, key, key)
		o := fmt.Sprint(r["status"])
		if c := errCode(r); c != "" {
			o += " " + c
		}
		outcomes[o]++
		if r["status"] != "success" {
			text := fmt.Sprint(r["error"])
			if outcomes[o] == 1 {
				t.Logf("the first call refused so on a full disk: %s", text)
			}
			if !strings.Contains(text, "Try again") || !strings.Contains(text, "free space") {
				t.Errorf("call %s on a full disk: %v; the refusal does not say what to do (free space, then try again)", key, r)
			}
			if strings.Contains(text, "Nothing ran") && up.count("count "+key) != 0 {
				t.Errorf("call %s refused (%v), yet it ran", key, r)
			}
		}
		if n := up.count("count " + key); n > 1 {
			t.Errorf("call %s ran %d times", key, n)
		}
	}
	t.Logf("calls on a full disk: %v", outcomes)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		key := fmt.Sprintf("after-%d", time.Now().UnixNano())
		if r := <-postCall(base, key, key); r["status"] == "success" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the gateway does not serve again once space is back: %v", r)
		}
	}
	for i := range 20 {
		if got := getJSONTB(t, fmt.Sprintf("%s/v1/requests/before-%d", base, i)); got["id"] != fmt.Sprintf("before-%d", i) {
			t.Fatalf("request before-%d, recorded before the disk filled: %v", i, got)
		}
		if r := callHTTP(t, base, fmt.Sprintf("before-%d", i), "c", "up__count", fmt.Sprintf(`{"key":"before-%d"}`, i), ""); up.count(fmt.Sprintf("count before-%d", i)) != 1 {
			t.Fatalf("the retry of before-%d's call ran it again: %v", i, r)
		}
	}
}

// postCall calls up__count with key in request id (call id "c") through
// base, and gives its first result (or the answer, when it has none).
func postCall(base, id, key string) <-chan map[string]any {
	ch := make(chan map[string]any, 1)
	go func() {
		body := fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":"c","tool":"up__count","arguments":{"key":%q}}]}`, id, key)
		client := &http.Client{Timeout: 2 * time.Minute}
		out := map[string]any{}
		if resp, err := client.Post(base+"/v1/calls", "application/json", strings.NewReader(body)); err == nil {
			json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
		} else {
			out["status"] = "no answer: " + err.Error()
		}
		if r, _ := out["results"].([]any); len(r) > 0 {
			ch <- r[0].(map[string]any)
			return
		}
		ch <- out
	}()
	return ch
}

// TestChaos19SQLiteReadOnly: a gateway on SQLite started on a data folder
// whose filesystem is read-only (a failing disk remounted so; a folder of
// another user's is the same to SQLite, but root is not refused by
// permissions) exits saying what is wrong; once the folder is writable
// again it starts and has what it recorded. (A filesystem cannot be
// remounted read-only under a running gateway: the kernel refuses, the
// database being open for writing.)
func TestChaos19SQLiteReadOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("a process and a mounted filesystem: skipped in -short mode")
	}
	disk := smallDisk(t, "16m")
	up, upURL := sharedUpstream(t)
	data := filepath.Join(disk, "data")
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf("upstreams:\n  - {name: up, url: '%s'}\nbudgets:\n  default: {tool_calls: 100000, wall: 1h}\n", upURL))
	cmd := startReach(t, cfg, addr, data)
	base := "http://" + addr
	if r := callHTTP(t, base, "before", "c", "up__count", `{"key":"before"}`, ""); r["status"] != "success" {
		t.Fatalf("call before the folder turned read-only: %v", r)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if out, err := exec.Command("mount", "-o", "remount,ro", disk).CombinedOutput(); err != nil {
		t.Skipf("remounting read-only: %v: %s", err, out)
	}
	second := serveCmd(t, cfg, freeAddr(t), data)
	done := make(chan []byte, 1)
	go func() {
		out, _ := second.CombinedOutput()
		done <- out
	}()
	var out []byte
	select {
	case out = <-done:
	case <-time.After(time.Minute):
		second.Process.Kill()
		t.Fatalf("reach serve on a read-only folder did not exit: %s", <-done)
	}
	t.Logf("reach serve on a read-only folder: %s", bytes.TrimSpace(out))
	if second.ProcessState.Success() || !strings.Contains(string(out), "read-only") {
		t.Errorf("reach serve on a read-only folder: %s; want an error naming the read-only file system", out)
	}
	if out, err := exec.Command("mount", "-o", "remount,rw", disk).CombinedOutput(); err != nil {
		t.Fatalf("remounting read-write: %v: %s", err, out)
	}
	addr = freeAddr(t)
	startReach(t, cfg, addr, data)
	if got := getJSONTB(t, "http://"+addr+"/v1/requests/before"); got["id"] != "before" {
		t.Errorf("request before, read once the folder is writable again: %v", got)
	}
	if r := callHTTP(t, "http://"+addr, "before", "c", "up__count", `{"key":"before"}`, ""); up.count("count before") != 1 {
		t.Errorf("the retry of before's call ran it again: %v", r)
	}
}
