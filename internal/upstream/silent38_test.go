package upstream

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
)

// TestCommandUpstreamSilentSaysWhatItLacks: a command upstream that runs
// and does not answer within its timeout (npx -y fetching the server from
// a registry it cannot reach: only PATH, HOME and a few more of reach's
// variables reach it, no proxy, no CA bundle) fails with its stderr's
// last lines and what to give it under env:. The error said "no answer
// within 30s" alone, and npm retried in silence.
func TestCommandUpstreamSilentSaysWhatItLacks(t *testing.T) {
	life, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := &host{}
	defer h.close()
	up := config.Upstream{Name: "mem", Command: []string{"sh", "-c", "echo fetching the package >&2; exec sleep 30"},
		Timeout: config.Duration(time.Second), Required: true}
	p, err := Connect(t.Context(), life, &Options{Config: &config.Config{Upstreams: []config.Upstream{up}},
		Runner: h, Catalog: h, Levels: h, Models: reach.New(nil)})
	if err == nil {
		p.Close()
		t.Fatal("a command upstream that never answers connected")
	}
	msg := err.Error()
	for _, want := range []string{"no answer within 1s", "fetching the package", "env:", "HTTPS_PROXY", "timeout:", "start it or check its command"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the start failed with %q; want it to say %q", msg, want)
		}
	}
}

// TestURLUpstreamSilentSaysNothingOfEnv: a URL upstream that does not
// answer in time is not told about a command's environment.
func TestURLUpstreamSilentSaysNothingOfEnv(t *testing.T) {
	u := &upstream{cfg: config.Upstream{Name: "up", URL: "http://127.0.0.1:1/mcp"}}
	if got := u.silent(nil); got != "" {
		t.Errorf("silent of a URL upstream = %q, want nothing", got)
	}
}
