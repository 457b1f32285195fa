package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOutage21FullDiskThenKilled: a write call (its own idempotency key)
// ends on a full disk: its client is answered success, and SQLite refuses
// its completion. The gateway is then stopped (SIGTERM) or killed (kill
// -9) before space comes back. The kept file is on the same disk, but its
// reserve file (1 MiB, written at start) is removed to make room, so the
// completion reaches it; after the next start, with room again, a retry of
// the key is answered the call's result, and the call ran once. Before,
// the kept file could not be written, the completion was lost and the
// retry was answered interrupted ("may have taken effect").
func TestOutage21FullDiskThenKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("a process and a mounted filesystem: skipped in -short mode")
	}
	for _, how := range []string{"sigterm", "kill"} {
		t.Run(how, func(t *testing.T) {
			disk := smallDisk(t, "8m")
			_, upURL := sharedUpstream(t)
			g, gateURL := gateUpstream(t)
			data := filepath.Join(disk, "data")
			addr := freeAddr(t)
			cfg := writeConfig(t, fmt.Sprintf("upstreams:\n  - {name: up, url: '%s'}\n  - {name: gate, url: '%s'}\nbudgets:\n  default: {tool_calls: 100000, wall: 1h}\n", upURL, gateURL))
			cmd := startReach(t, cfg, addr, data)
			base := "http://" + addr
			f := &fleet{t: t}
			f.addr[0] = addr
			done := gateKeyed(t, f, g, 0, "r-full", "full")
			filler := fill(t, disk)
			close(g.gate("full"))
			if r := <-done; r["status"] != "success" {
				t.Fatalf("the call that ended on a full disk: %v; want success", r)
			}
			// The completion, refused by the full disk, is kept once the
			// reserve file made room for it. The client's answer does not
			// wait for the completion (it is queued), and the reserve file
			// goes just before the line is written: the test waits for the
			// line itself, complete, before it stops the gateway.
			keptPath := filepath.Join(data, "idempotency-kept.jsonl")
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
				if keptLineFor(keptPath, "k-full") {
					break
				} else if time.Now().After(deadline) {
					b, _ := os.ReadFile(keptPath)
					_, rerr := os.Stat(filepath.Join(data, ".idempotency-kept.jsonl.reserve"))
					t.Fatalf("a minute after a completion was refused on a full disk, the kept file holds no complete line with its result: %q (reserve file: %v)", b, rerr)
				}
			}
			if how == "kill" {
				cmd.Process.Kill()
			} else {
				cmd.Process.Signal(syscall.SIGTERM)
			}
			cmd.Wait()
			left, _ := filepath.Glob(filepath.Join(data, "idempotency-kept*"))
			for _, p := range left {
				b, _ := os.ReadFile(p)
				t.Logf("%s on a full disk: %s holds %q", how, filepath.Base(p), b)
			}
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			startReach(t, cfg, addr, data)
			r := callHTTP(t, base, "r-retry", "g", "gate__gate", `{"key":"full"}`, "k-full")
			t.Logf("the retry after %s on a full disk: %v", how, r)
			if n := g.count("full"); n != 1 {
				t.Fatalf("the call ran %d times; want once", n)
			}
			if r["status"] != "success" || !strings.Contains(fmt.Sprint(r["data"]), "passed full") {
				t.Fatalf("the retry after %s on a full disk: %v; want the call's result (kept in the data folder, in the room its reserve file left)", how, r)
			}
		})
	}
}

// keptLineFor reports whether the kept file at path holds a complete line
// (newline-terminated JSON) keeping the completion, with its result, of
// the idempotency key ending in key.
func keptLineFor(path, key string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		var l struct {
			Key    string          `json:"key"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && strings.HasSuffix(l.Key, ":"+key) && len(l.Result) > 0 {
			return true
		}
	}
	return false
}
