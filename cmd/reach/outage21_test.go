package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readyReasons answers /readyz's status code and its reasons, joined.
func readyReasons(t *testing.T, base string) (int, string) {
	t.Helper()
	code, body := probe(t, base+"/readyz")
	var got struct {
		Reasons []string `json:"reasons"`
	}
	json.Unmarshal([]byte(body), &got)
	return code, strings.Join(got.Reasons, "; ")
}

// TestOutage21SQLiteReadyOnFullDisk: the data folder's disk fills up under
// a gateway on SQLite. Once a write fails, /readyz answers 503 saying the
// disk is full and what to do; once space is back it answers 200 again,
// with no call sent meanwhile (a balancer that took it out sends none):
// the store's probe write finds the room. /livez stays 200 (a restart does
// not free a disk). /readyz used to answer 200 throughout: SQLite has no
// heartbeat it was read from.
func TestOutage21SQLiteReadyOnFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("a process and a mounted filesystem: skipped in -short mode")
	}
	disk := smallDisk(t, "8m")
	_, upURL := sharedUpstream(t)
	data := filepath.Join(disk, "data")
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf("upstreams:\n  - {name: up, url: '%s'}\nbudgets:\n  default: {tool_calls: 100000, wall: 1h}\n", upURL))
	startReach(t, cfg, addr, data)
	base := "http://" + addr
	for i := range 5 {
		if r := callHTTP(t, base, fmt.Sprintf("before-%d", i), "c", "up__count", fmt.Sprintf(`{"key":"before-%d"}`, i), ""); r["status"] != "success" {
			t.Fatalf("call before the disk filled: %v", r)
		}
	}
	if code, why := readyReasons(t, base); code != http.StatusOK {
		t.Fatalf("/readyz before the disk filled: %d %s", code, why)
	}
	filler := fill(t, disk)
	refused := false
	for i := 0; ; i++ {
		key := fmt.Sprintf("full-%d", i)
		r := <-postCall(base, key, key)
		if r["status"] != "success" {
			refused = true
		}
		code, why := readyReasons(t, base)
		if code == http.StatusServiceUnavailable {
			if !strings.Contains(why, "disk is full") || !strings.Contains(why, "free space") {
				t.Fatalf("/readyz on a full disk: %s; want it to say the disk is full and to free space", why)
			}
			break
		}
		if i >= 200 {
			t.Fatalf("after %d calls on a full disk (refused: %v; the last %v), /readyz answers %d %s", i+1, refused, r, code, why)
		}
	}
	if code, body := probe(t, base+"/livez"); code != http.StatusOK {
		t.Fatalf("/livez on a full disk: %d %s; want 200", code, body)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	awaitProbe(t, base+"/readyz", http.StatusOK)
	key := fmt.Sprintf("after-%d", time.Now().UnixNano())
	if r := <-postCall(base, key, key); r["status"] != "success" {
		t.Fatalf("a call once /readyz is 200 again: %v", r)
	}
}

// TestOutage21SQLiteReadyFolderRemoved: the data folder is removed under a
// running gateway on SQLite. SQLite goes on writing the removed file, so
// calls succeed, and all they record is lost when the process stops:
// /readyz answers 503 naming the database file and what to do. It used to
// answer 200.
func TestOutage21SQLiteReadyFolderRemoved(t *testing.T) {
	if testing.Short() {
		t.Skip("a process: skipped in -short mode")
	}
	_, upURL := sharedUpstream(t)
	data := filepath.Join(t.TempDir(), "data")
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf("upstreams:\n  - {name: up, url: '%s'}\nbudgets:\n  default: {tool_calls: 100000, wall: 1h}\n", upURL))
	startReach(t, cfg, addr, data)
	base := "http://" + addr
	if r := callHTTP(t, base, "before", "c", "up__count", `{"key":"before"}`, ""); r["status"] != "success" {
		t.Fatalf("call: %v", r)
	}
	if code, why := readyReasons(t, base); code != http.StatusOK {
		t.Fatalf("/readyz before: %d %s", code, why)
	}
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	awaitProbe(t, base+"/readyz", http.StatusServiceUnavailable)
	if _, why := readyReasons(t, base); !strings.Contains(why, "removed or replaced") || !strings.Contains(why, "reach.db") {
		t.Fatalf("/readyz with the data folder removed: %s; want it to name the database file, removed", why)
	}
}
