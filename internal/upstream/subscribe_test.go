package upstream

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// subscribableServer serves a server of one resource that takes
// subscriptions and answers each with err (nil: subscribed).
func subscribableServer(t *testing.T, err error) *httptest.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "sub", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return err },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	const uri = "file:///notes.txt"
	s.AddResource(&mcp.Resource{URI: uri, Name: "notes"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "hi"}}}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv
}

// guardedPool is newPoolMasking with g in front of subscriptions.
func guardedPool(t *testing.T, cfg *config.Config, red *redact.Redactor, g Guard) *Pool {
	t.Helper()
	life, cancel := context.WithCancel(context.Background())
	h := &host{}
	p, err := Connect(t.Context(), life, &Options{Config: cfg, Runner: h, Catalog: h, Levels: h, Models: reach.New(nil), Redactor: red})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	p.SetGuard(g)
	p.Serve(t.Context(), mcp.NewServer(&mcp.Implementation{Name: "gateway"}, nil))
	t.Cleanup(func() {
		cancel()
		h.close()
		p.Close()
	})
	return p
}

// TestSubscribeRefusalWins: a subscription the guard refuses on one
// upstream, which a later upstream fails for a reason of its own, is
// answered with the refusal: the later error replaced it, and the client
// learnt of an upstream's failure, not that it was refused. An upstream's
// error is masked as the other passthroughs' are.
func TestSubscribeRefusalWins(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	refusal := errors.New("refused: no policy allows reading this resource")
	cfg := &config.Config{Upstreams: []config.Upstream{
		{Name: "a", URL: subscribableServer(t, nil).URL},
		{Name: "b", URL: subscribableServer(t, errors.New("backend down, key "+secret)).URL},
	}}
	red, err := redact.New(&redact.Options{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	p := guardedPool(t, cfg, red, func(_ context.Context, _ mcp.Request, a Asked) error {
		if a.Upstream == "a" {
			return refusal
		}
		return nil
	})
	req := &mcp.SubscribeRequest{Params: &mcp.SubscribeParams{URI: "file:///notes.txt"}}
	if err := p.Subscribe(t.Context(), req); !errors.Is(err, refusal) {
		t.Errorf("Subscribe: %v, want the refusal %q", err, refusal)
	}

	p = guardedPool(t, cfg, red, func(context.Context, mcp.Request, Asked) error { return refusal })
	if err := p.Subscribe(t.Context(), req); !errors.Is(err, refusal) {
		t.Errorf("both refused: %v, want the refusal", err)
	}

	p = guardedPool(t, &config.Config{Upstreams: cfg.Upstreams[1:]}, red, func(context.Context, mcp.Request, Asked) error { return nil })
	err = p.Subscribe(t.Context(), req)
	if err == nil || !strings.Contains(err.Error(), "backend down") || strings.Contains(err.Error(), secret) {
		t.Errorf("b's error: %v, want it with the secret masked", err)
	}
}
