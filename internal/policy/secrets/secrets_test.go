package secrets

import (
	"os"
	"path/filepath"
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
