package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/gateway"
)

// TestConfigNamesDataFolder: the commands that read the gateway's data
// folder (audit, tools, deadletters) take --config, as keys and serve do,
// and read that configuration's data folder (relative to the file) or its
// PostgreSQL store; --data still wins. They answered "unknown flag:
// --config", and a user whose configuration names its data folder had to
// spell it again.
func TestConfigNamesDataFolder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "reach.yaml")
	if err := os.WriteFile(file, []byte("data: state\nexamples: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	resp, err := http.Post(srv.URL+"/v1/calls", "application/json", strings.NewReader(`{"request_id":"req_cfg","tool_calls":[{"call_id":"c1","tool":"get_order","arguments":{"order_id":"1001"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	srv.Close()
	g.Close()
	if _, err := os.Stat(filepath.Join(dir, "state", "reach.db")); err != nil {
		t.Fatalf("the gateway kept no store in the configuration's data folder: %v", err)
	}

	if out, _, err := runCmd(t, newAudit, "verify", "--config", file); err != nil || !strings.Contains(out, "chain ok") {
		t.Errorf("audit verify --config: %v\n%s", err, out)
	}
	if out, _, err := runCmd(t, newAudit, "show", "--config", file, "req_cfg"); err != nil || !strings.Contains(out, "get_order") {
		t.Errorf("audit show --config: %v\n%s", err, out)
	}
	if out, _, err := runCmd(t, newDeadLetters, "list", "--config", file); err != nil || strings.TrimSpace(out) != "no dead letters" {
		t.Errorf("deadletters list --config: %v\n%s", err, out)
	}
	if out, _, err := runCmd(t, newToolsCmd, "list", "--config", file); err != nil {
		t.Errorf("tools list --config: %v\n%s", err, out)
	}
	// --data wins over the configuration's.
	other := filepath.Join(dir, "other")
	if _, _, err := runCmd(t, newAudit, "verify", "--config", file, "--data", other); err == nil || !strings.Contains(err.Error(), "no audit log in "+other) {
		t.Errorf("audit verify --config --data: %v, want the --data folder read", err)
	}
	// A configuration's store: is read as --store would be.
	pg := filepath.Join(dir, "pg.yaml")
	os.WriteFile(pg, []byte("store: postgres://reach@127.0.0.1:1/reach?sslmode=disable\n"), 0o600)
	for _, c := range []func() error{
		func() error { _, _, err := runCmd(t, newAudit, "verify", "--config", pg); return err },
		func() error { _, _, err := runCmd(t, newDeadLetters, "list", "--config", pg); return err },
	} {
		if err := c(); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
			t.Errorf("a configuration with store: %v, want its PostgreSQL asked", err)
		}
	}
	if _, _, err := runCmd(t, newAudit, "verify", "--config", filepath.Join(dir, "nope.yaml")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a configuration that is not there: %v", err)
	}
}
