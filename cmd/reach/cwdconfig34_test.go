package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A new user writes reach.yaml (the README's "A configuration") and runs
// reach serve in its folder: the file was not read, and nothing said so.
// Its tools section's forbidden tool was served, its auth: not asked for.
// serve without --config now says that the file beside it is not read and
// how to serve it; with --config, or with no such file, nothing is said.
func TestServeSaysConfigBesideItIsNotRead(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		config     bool
		warned     bool
	}{
		{"reach.yaml beside it", "reach.yaml", false, true},
		{"reach.yml beside it", "reach.yml", false, true},
		{"served with --config", "reach.yaml", true, false},
		{"no file", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			addr := freeAddr(t)
			if tc.file != "" {
				if err := os.WriteFile(filepath.Join(dir, tc.file), []byte("listen: "+addr+"\ntools:\n  refund_order: {access: forbidden}\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"serve", "--listen", addr}
			if tc.config {
				args = append(args, "--config", tc.file)
			}
			cmd := exec.Command(exe(t), args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "REACH_AS_CLI=1")
			logf := filepath.Join(t.TempDir(), "serve.log")
			f, err := os.Create(logf)
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout, cmd.Stderr = f, f
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait(); f.Close() }()
			if !serving(addr, 3000) {
				b, _ := os.ReadFile(logf)
				t.Fatalf("reach serve did not start:\n%s", b)
			}
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
			b, _ := os.ReadFile(logf)
			out := string(b)
			warned := strings.Contains(out, tc.file+" is in this folder but not read") && strings.Contains(out, "reach serve --config "+tc.file)
			if warned != tc.warned {
				t.Errorf("reach serve (%s) said:\n%s\nwarned of the file not read: %v, want %v", tc.name, out, warned, tc.warned)
			}
		})
	}
}
