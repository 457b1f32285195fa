package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review1ResourceUpstream serves one subscribable resource.
func review1ResourceUpstream(t *testing.T, uri string) *mcp.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "res", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.AddResource(&mcp.Resource{URI: uri, Name: "notes"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "hi"}}}, nil
	})
	return s
}

// review1Subscriber connects a client on a protocol with resources/subscribe
// (which the gateway passes upstream); updates go to the channel.
func review1Subscriber(t *testing.T, g *Gateway, updated chan<- string) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.MCPServer().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		}})
	cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: leanProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestUnsubscribeLeavesOtherSubscribers: two clients subscribe to an
// upstream's resource through the gateway's one session with it; when one
// unsubscribes, the other still hears of updates.
func TestUnsubscribeLeavesOtherSubscribers(t *testing.T) {
	const uri = "file:///notes.txt"
	s := review1ResourceUpstream(t, uri)
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := ParseConfig([]byte("upstreams:\n  - name: res\n    url: "+up.URL+"\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	updatesA, updatesB := make(chan string, 4), make(chan string, 4)
	a, b := review1Subscriber(t, g, updatesA), review1Subscriber(t, g, updatesB)
	for _, cs := range []*mcp.ClientSession{a, b} {
		if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
	}
	if err := a.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatalf("Unsubscribe: %v", err)
	}
	if err := s.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-updatesB:
		if got != uri {
			t.Errorf("b heard of an update of %q, want %q", got, uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b, still subscribed, never heard of the update after a unsubscribed")
	}
	select {
	case got := <-updatesA:
		t.Errorf("a, unsubscribed, heard of an update of %q", got)
	default:
	}
}

// TestResourceUpdatesReachSubscribers: the gateway takes resource
// subscriptions for its upstreams, so a client that subscribed gets the
// upstream's notifications/resources/updated for that resource.
func TestResourceUpdatesReachSubscribers(t *testing.T) {
	subscribed := make(chan string, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "res", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			subscribed <- req.Params.URI
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	const uri = "file:///notes.txt"
	s.AddResource(&mcp.Resource{URI: uri, Name: "notes"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "hi"}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := ParseConfig([]byte("upstreams:\n  - name: res\n    url: "+up.URL+"\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	updated := make(chan string, 4)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.MCPServer().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		}})
	// A protocol with resources/subscribe, which the gateway passes upstream.
	cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: leanProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if got := <-subscribed; got != uri {
		t.Fatalf("the upstream was subscribed to %q", got)
	}
	if err := s.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-updated:
		if got != uri {
			t.Errorf("the client heard of an update of %q, want %q", got, uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client that subscribed never heard of the upstream's update")
	}
}

// TestUpstreamResourceAndPromptListsFollowChanges: resources and prompts an
// upstream adds or removes after the gateway started (it says so with
// list_changed) are listed, or no longer, by the gateway.
func TestUpstreamResourceAndPromptListsFollowChanges(t *testing.T) {
	const uri = "file:///notes.txt"
	s := review1ResourceUpstream(t, uri)
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := ParseConfig([]byte("upstreams:\n  - name: res\n    url: "+up.URL+"\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	cs := connectMCP(t, g, nil)
	resources := func() string {
		res, err := cs.ListResources(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range res.Resources {
			out = append(out, r.URI)
		}
		return strings.Join(out, ",")
	}
	prompts := func() string {
		res, err := cs.ListPrompts(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range res.Prompts {
			out = append(out, p.Name)
		}
		return strings.Join(out, ",")
	}
	if got := resources(); got != uri {
		t.Fatalf("resources = %q", got)
	}
	const added = "file:///todo.txt"
	s.AddResource(&mcp.Resource{URI: added, Name: "todo"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: added, Text: "buy milk"}}}, nil
	})
	s.RemoveResources(uri)
	waitUntil(t, "the gateway to list the upstream's new resource and drop the old", func() bool { return resources() == added })
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: added})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "buy milk" {
		t.Errorf("reading the new resource = %v, %v", res, err)
	}
	s.AddPrompt(&mcp.Prompt{Name: "bye"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	s.RemovePrompts("greet")
	waitUntil(t, "the gateway to list the upstream's new prompt and drop the old", func() bool { return prompts() == "res__bye" })
}

// TestResourcesAndPromptsFromNewProtocolClient: a client on the protocol
// that names its version in each request's _meta reads an upstream's
// resource and gets its prompt through the gateway, whose own session with
// the upstream is on another protocol.
func TestResourcesAndPromptsFromNewProtocolClient(t *testing.T) {
	const uri = "file:///notes.txt"
	s := review1ResourceUpstream(t, uri)
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := ParseConfig([]byte("upstreams:\n  - name: res\n    url: "+up.URL+"\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	cs := connectMCP(t, g, nil)
	if v := cs.InitializeResult().ProtocolVersion; v < statelessProtocol {
		t.Fatalf("the client speaks %s, want %s or later", v, statelessProtocol)
	}
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "hi" {
		t.Errorf("resources/read = %v, %v", res, err)
	}
	pr, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "res__greet"})
	if err != nil || len(pr.Messages) != 1 {
		t.Errorf("prompts/get = %v, %v", pr, err)
	}
}

// TestNewProtocolClientSubscribes: a client on the protocol that subscribes
// with subscriptions/listen (and names its version in _meta) gets its
// subscription to the upstream, and the upstream's updates.
func TestNewProtocolClientSubscribes(t *testing.T) {
	const uri = "file:///notes.txt"
	subscribed := make(chan string, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "res", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			subscribed <- req.Params.URI
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.AddResource(&mcp.Resource{URI: uri, Name: "notes"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "hi"}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := ParseConfig([]byte("upstreams:\n  - name: res\n    url: "+up.URL+"\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	updated := make(chan string, 64)
	cs := connectMCP(t, g, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}})
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	select {
	case got := <-subscribed:
		if got != uri {
			t.Fatalf("the upstream was subscribed to %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream was never subscribed")
	}
	// The gateway records the client's subscription once the upstream has
	// taken it: an update in between reaches nobody, so update until one
	// arrives.
	waitUntil(t, "the client to hear of the upstream's update", func() bool {
		s.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
		select {
		case got := <-updated:
			return got == uri
		default:
			return false
		}
	})
}
