package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/gateway"
)

// TestBannerRedactsModelURL: the banner shows the model's URL without
// credentials or query (which may hold a key).
func TestBannerRedactsModelURL(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"http://127.0.0.1:8000/v1", "to http://127.0.0.1:8000/v1)"},
		{"https://res.example.com/openai/v1?api-key=sk-secret&api-version=1", "to https://res.example.com/openai/v1?…)"},
		{"https://user:sk-secret@api.example.com/v1", "to https://xxxxx@api.example.com/v1)"},
		{"https://sk-secret@api.example.com/v1#sk-secret", "to https://xxxxx@api.example.com/v1)"},
	} {
		// Built directly, not parsed: the banner does not rely on the
		// configuration check refusing credentials.
		cfg := &gateway.Config{Data: t.TempDir(), Model: &gateway.ModelConfig{BaseURL: tc.url, Name: "m"}}
		g, err := gateway.New(t.Context(), cfg, &gateway.Options{Offline: true, Ephemeral: true})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		printBanner(&b, g, "127.0.0.1:7400", cfg.Data)
		g.Close()
		if out := b.String(); strings.Contains(out, "sk-secret") || !strings.Contains(out, tc.want) {
			t.Errorf("banner for model %s:\n%s\nwant %q and no secret", tc.url, out, tc.want)
		}
	}
}

// TestBannerWarnsOfUncheckedKeys: a gateway whose data folder holds API
// keys while its configuration has no auth says so in its banner: it asks
// no client for credentials, and the keys are not checked.
func TestBannerWarnsOfUncheckedKeys(t *testing.T) {
	dir := t.TempDir()
	keys, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := keys.Create(auth.KeySpec{Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		auth *gateway.AuthConfig
		warn bool
	}{{nil, true}, {&gateway.AuthConfig{Keys: true}, false}} {
		cfg := &gateway.Config{Data: dir, Auth: tc.auth}
		g, err := gateway.New(t.Context(), cfg, &gateway.Options{Offline: true, Ephemeral: true})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		printBanner(&b, g, "127.0.0.1:7400", dir)
		g.Close()
		out := b.String()
		warned := strings.Contains(out, "holds 1 API keys, but the configuration has no auth") && strings.Contains(out, "auth:\n    keys: true")
		if warned != tc.warn {
			t.Errorf("auth %+v: banner warns of unchecked keys %v, want %v:\n%s", tc.auth, warned, tc.warn, out)
		}
	}
}
