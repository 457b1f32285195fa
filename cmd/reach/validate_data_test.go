//go:build unix

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate says, as a warning, what would keep reach serve from starting
// on its data folder: a file where the folder or one above it should be,
// and the folder held by a running reach serve. It used to say "ok" and
// serve then failed. It creates nothing: a missing folder stays missing,
// and no file of its probe is left behind.
func TestValidateWarnsOfDataFolder(t *testing.T) {
	validate := func(t *testing.T, config string) string {
		t.Helper()
		var out strings.Builder
		if err := run(context.Background(), []string{"validate", "--offline", "--config", config}, &out, io.Discard); err != nil {
			t.Fatalf("validate: %v", err)
		}
		return out.String()
	}

	t.Run("a file in the way", func(t *testing.T) {
		config := writeConfig(t, "listen: 127.0.0.1:0\ndata: ./afile/state\n")
		if err := os.WriteFile(filepath.Join(filepath.Dir(config), "afile"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		out := validate(t, config)
		if want := "warning: data: reach serve could not create its data folder " + filepath.Join(filepath.Dir(config), "afile", "state"); !strings.Contains(out, want) ||
			!strings.Contains(out, "give reach a folder it may write") {
			t.Errorf("validate:\n%s\nwant %q, saying what to do", out, want)
		}
	})

	t.Run("a folder to create", func(t *testing.T) {
		config := writeConfig(t, "listen: 127.0.0.1:0\ndata: ./new/state\n")
		out := validate(t, config)
		if strings.Contains(out, "warning: data") {
			t.Errorf("validate of a folder serve can create:\n%s\nwant no warning", out)
		}
		entries, err := os.ReadDir(filepath.Dir(config))
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			t.Errorf("validate left %v beside the configuration; want it to create nothing", entries)
		}
	})

	t.Run("held by a running gateway", func(t *testing.T) {
		config := writeConfig(t, "listen: 127.0.0.1:0\n")
		data := filepath.Join(filepath.Dir(config), ".reach")
		_, stop, _ := startServe(t, "--config", config)
		out := validate(t, config)
		want := "warning: data: " + data + " is in use now by another reach (pid "
		if !strings.Contains(out, want) || !strings.Contains(out, "give this one a data folder of its own") {
			t.Errorf("validate while serve holds the folder:\n%s\nwant %q, saying what to do", out, want)
		}
		// The probe held nothing: a second serve after the first one
		// stops gets the folder.
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if out := validate(t, config); strings.Contains(out, "warning: data") {
			t.Errorf("validate once serve stopped:\n%s\nwant no warning", out)
		}
		_, stop2, _ := startServe(t, "--config", config)
		stop2()
		entries, _ := os.ReadDir(data)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".reach-validate-") {
				t.Errorf("validate left %s in the data folder", e.Name())
			}
		}
	})
}
