package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAttack33ResourceUpdateMasksSecrets: an upstream's
// notifications/resources/updated reaches the client that subscribed with
// the configured secrets masked in its _meta, as the upstream's reads,
// logs, progress, sampling and elicitation requests are. The upstream is
// sent the gateway's header (its bearer token) and may echo it: the
// update's _meta was passed on as the upstream wrote it.
func TestAttack33ResourceUpdateMasksSecrets(t *testing.T) {
	const secret = "sk-upstream-7d1c0ffee5eed42"
	const uri = "file:///notes.txt"
	s := resourceUpstream(t, uri)
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("upstreams:\n  - {name: res, url: '"+up.URL+"', headers: {Authorization: 'Bearer ${UP_TOKEN}'}}\n"),
		func(name string) (string, bool) { return secret, name == "UP_TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.MCPServer().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	updated := make(chan *mcp.ResourceUpdatedNotificationParams, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "subscriber", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params
		}})
	cs, err := c.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := s.ResourceUpdated(t.Context(), &mcp.ResourceUpdatedNotificationParams{URI: uri,
		Meta: mcp.Meta{"reason": "token " + secret + " rotated", "by": map[string]any{"header": "Bearer " + secret}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-updated:
		b, _ := json.Marshal(got)
		if strings.Contains(string(b), secret) {
			t.Errorf("the update reached the client with the upstream's secret: %s", b)
		}
		if got.URI != uri || !strings.Contains(string(b), "rotated") {
			t.Errorf("the update reached the client as %s, want the URI and the rest of its _meta kept", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client that subscribed never heard of the upstream's update")
	}
}
