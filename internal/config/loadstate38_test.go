package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadStateLeavesUnsetSecretsAsWritten: LoadState reads a configuration
// whose header, env and model key name unset variables, leaving each
// reference as written (a set one expanded, $${ a literal ${), while Load
// refuses it; an unset variable in store: is an error for both.
func TestLoadStateLeavesUnsetSecretsAsWritten(t *testing.T) {
	t.Setenv("REACH_T38_SET", "tok")
	dir := t.TempDir()
	p := filepath.Join(dir, "reach.yaml")
	text := "upstreams:\n  - name: up\n    url: https://up.example/mcp\n    headers: {A: \"Bearer ${REACH_T38_UNSET}\", B: \"${REACH_T38_SET}\", C: \"$${LIT}\"}\n" +
		"model: {base_url: \"https://api.example/v1\", api_key: \"${REACH_T38_UNSET}\"}\n"
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "${REACH_T38_UNSET} is not set") {
		t.Fatalf("Load: %v, want the unset variable refused", err)
	}
	c, err := LoadState(p)
	if err != nil {
		t.Fatalf("LoadState: %v", err)
	}
	h := c.Upstreams[0].Headers
	for k, want := range map[string]string{"A": "Bearer ${REACH_T38_UNSET}", "B": "tok", "C": "${LIT}"} {
		if got := h[k].Reveal(); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if got := c.Model.APIKey.Reveal(); got != "${REACH_T38_UNSET}" {
		t.Errorf("api_key = %q, want it as written", got)
	}
	if err := os.WriteFile(p, []byte("store: \"postgres://u:${REACH_T38_UNSET}@127.0.0.1:5432/db\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadState(p); err == nil || !strings.Contains(err.Error(), "${REACH_T38_UNSET} is not set") {
		t.Errorf("LoadState with store:'s variable unset: %v, want it refused", err)
	}
}
