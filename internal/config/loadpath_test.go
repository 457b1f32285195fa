package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// A --config path that names nothing, or a folder, is an error that says
// so and what to give instead, not the system's "no such file or
// directory" or "is a directory" alone.
func TestLoadPathMistakes(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"relative, missing", "reach.yml", []string{"reach.yml does not exist", "check the path given to --config", "read from the current folder, " + dir}},
		{"absolute, missing", filepath.Join(dir, "nope.yaml"), []string{filepath.Join(dir, "nope.yaml") + " does not exist", "check the path given to --config"}},
		{"a folder", dir, []string{dir + " is a folder", "give --config the configuration file in it (e.g. " + filepath.Join(dir, "reach.yaml") + ")"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.path)
			if err == nil {
				t.Fatal("Load: no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load: %v\nwant it to contain %q", err, w)
				}
			}
			if filepath.IsAbs(tc.path) && strings.Contains(err.Error(), "current folder") {
				t.Errorf("Load: %v\nan absolute path is not read from the current folder", err)
			}
		})
	}
}
