package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
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
		cfg := &config.Config{Data: t.TempDir(), Model: &config.ModelConfig{BaseURL: tc.url, Name: "m"}}
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
