package secrets

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "secrets.env")
	os.WriteFile(env, []byte("# upstream credentials\nGITHUB_TOKEN=ghp_x\nexport DB_PASSWORD=\"p w\\n\"\n\nQ='single'\n"), 0o600)
	got, err := ReadFile(env)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"GITHUB_TOKEN": "ghp_x", "DB_PASSWORD": "p w\n", "Q": "single"}, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	js := filepath.Join(dir, "secrets.json")
	os.WriteFile(js, []byte(`{"A":"b"}`), 0o600)
	if got, err := ReadFile(js); err != nil || got["A"] != "b" {
		t.Errorf("json: %v %v", got, err)
	}
	os.WriteFile(env, []byte("no equals sign\n"), 0o600)
	if _, err := ReadFile(env); err == nil {
		t.Error("a malformed line was accepted")
	}
}

// FuzzReadFile reads any secrets file: never a panic, and an error, which
// goes to the log, never spells a value the file holds; a value on a
// NAME=VALUE line comes back as written.
func FuzzReadFile(f *testing.F) {
	f.Add("ghp_0123456789abcdef", []byte("\nexport B=\"q\\\"x\"\n# c\n"), false)
	f.Add("s3cr3t-value-long", []byte("\nnot a line\n"), false)
	f.Add("s3cr3t-value-long", []byte(`, "B": 7}`), true)
	f.Add("s3cr3t-value-long", []byte(`}garbage`), true)
	f.Add("'half-quoted-value", []byte("\n=x\n"), false)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, value string, rest []byte, asJSON bool) {
		var file []byte
		if asJSON {
			q, _ := json.Marshal(value)
			file = append(append([]byte(`{"A":`), q...), rest...)
		} else {
			if strings.ContainsAny(value, "\r\n") || len(value) > 4096 {
				return
			}
			file = append([]byte("A="+value+"\n"), rest...)
		}
		path := filepath.Join(dir, "secrets")
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(path)
		if err != nil {
			v := strings.TrimSpace(value)
			if len(v) >= 8 && strings.Contains(err.Error(), v) && !strings.Contains(path+" line is not NAME=VALUE longer than bytes reading secrets from json invalid character", v) {
				t.Fatalf("error %q spells the value %q", err, v)
			}
			return
		}
		if asJSON {
			return // the rest may name A again
		}
		v := strings.TrimSpace(value)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			return // a quoted value comes back unquoted
		}
		if a, ok := got["A"]; ok && a != v && !bytes.Contains(rest, []byte("A")) {
			t.Fatalf("A=%q read as %q", v, a)
		}
	})
}

// A line past the bound is refused by its number, not its text.
func TestReadFileLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.env")
	os.WriteFile(path, []byte("A=b\nB="+strings.Repeat("z", 2<<20)+"\n"), 0o600)
	_, err := ReadFile(path)
	if err == nil || !strings.Contains(err.Error(), "line 2 is longer than") || strings.Contains(err.Error(), "zzzz") {
		t.Fatalf("err = %.200v, want line 2 named and no text of it", err)
	}
}
