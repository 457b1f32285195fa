package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store/sqlite"
)

// TestEnded20UndoThroughFullDisk is TestEnded20UndoThroughOutage on
// SQLite, whose outage is a full disk: a chain of two writes that declare
// an undo, the disk full while the second runs and ends (its client is
// answered success; SQLite refuses its ended checkpoint). Space comes
// back, the gateway writes the checkpoint it kept, and is killed (kill
// -9); restarted, its recovery interrupts the request and runs both
// undos once. Before, the second write's checkpoint was marked cancelled
// and its undo never ran. (A stop or a kill while the disk is still full
// loses the checkpoint: the data folder's file cannot be written either;
// docs/STATE.md.)
func TestEnded20UndoThroughFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("a process and a mounted filesystem: skipped in -short mode")
	}
	disk := smallDisk(t, "8m")
	up, upURL := sharedUpstream(t)
	g, gateURL := gateUpstream(t)
	data := filepath.Join(disk, "data")
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`upstreams:
  - {name: up, url: '%s'}
  - {name: gate, url: '%s'}
tools:
  up__book: {undo: {tool: up__unbook, args: '{"key": "{args.key}"}'}}
  gate__gate: {undo: {tool: up__unbook, args: '{"key": "{args.key}"}'}}
budgets:
  default: {tool_calls: 100000, wall: 1h}
`, upURL, gateURL))
	cmd := startReach(t, cfg, addr, data)
	base := "http://" + addr
	if r := callHTTP(t, base, "r-chain", "b1", "up__book", `{"key":"k1"}`, ""); r["status"] != "success" {
		t.Fatalf("the chain's first write: %v", r)
	}
	f := &fleet{t: t}
	f.addr[0] = addr
	done := gateInRequest(t, f, g, 0, "r-chain", "g2")
	filler := fill(t, disk)
	close(g.gate("g2"))
	if r := <-done; r["status"] != "success" {
		t.Fatalf("the write that ended on a full disk: %v; want success", r)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.OpenFile(filepath.Join(data, sqlite.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var state, undo string
		err := db.QueryRow(`SELECT state, ifnull(undo, '') FROM frames WHERE request = 'r-chain' AND name = 'gate__gate'`).Scan(&state, &undo)
		if err == nil && state == "completed" && undo != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ended checkpoint was not written once space came back: %q %q %v", state, undo, err)
		}
	}
	db.Close()
	cmd.Process.Kill()
	cmd.Wait()
	cmd = startReach(t, cfg, addr, data)
	for deadline := time.Now().Add(time.Minute); up.count("unbook g2") == 0 || up.count("unbook k1") == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			break
		}
	}
	if n := up.count("unbook g2"); n != 1 {
		t.Errorf("the undo of the write that ended on a full disk ran %d times; want once (the request interrupted)", n)
	}
	if n := up.count("unbook k1"); n != 1 {
		t.Errorf("the undo of the write before ran %d times; want once", n)
	}
	if n, m := g.count("g2"), up.count("book k1"); n != 1 || m != 1 {
		t.Errorf("the writes ran %d and %d times; want once each", m, n)
	}
	if got := getJSONTB(t, base+"/v1/requests/r-chain"); got["state"] != "interrupted" {
		t.Errorf("r-chain after the restart: %v; want interrupted", got["state"])
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if out, err := runCLI(t, "audit", "verify", "--data", data); err != nil {
		t.Fatalf("reach audit verify: %v: %s", err, out)
	}
}
