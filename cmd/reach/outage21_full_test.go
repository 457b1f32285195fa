package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOutage21FullDiskThenKilled: a write call (its own idempotency key)
// ends on a full disk: its client is answered success, SQLite refuses its
// completion, and the data folder's file cannot take it either (the same
// disk). The gateway is then stopped (SIGTERM) or killed (kill -9) before
// space comes back. What that loses is measured: after the next start,
// with room again, a retry of the key is not run again, and is answered
// either its result or (as now: the result is lost) interrupted, saying
// the call may have taken effect; never a success it does not have. The
// start logs the call (request, tool, key) as one that may have run, and
// the stopped gateway logged the key whose completion it could not keep.
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
			// The completion is refused (or kept) by the time /readyz says
			// the disk is full.
			awaitProbe(t, base+"/readyz", 503)
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
			if r["status"] == "success" {
				return // nothing lost
			}
			if errCode(r) != "interrupted" || !strings.Contains(fmt.Sprint(r["error"]), "may have taken effect") {
				t.Fatalf("the retry of a call whose result was lost: %v; want interrupted, saying it may have taken effect", r)
			}
		})
	}
}
