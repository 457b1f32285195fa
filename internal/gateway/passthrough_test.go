package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resourceUpstream serves one subscribable resource.
func resourceUpstream(t *testing.T, uri string) *mcp.Server {
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

// resourceSubscriber connects a client on a protocol with resources/subscribe
// (which the gateway passes upstream); updates go to the channel.
func resourceSubscriber(t *testing.T, g *Gateway, updated chan<- string) *mcp.ClientSession {
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
	cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
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
	s := resourceUpstream(t, uri)
	g := gatewayOver(t, s, "")
	updatesA, updatesB := make(chan string, 4), make(chan string, 4)
	a, b := resourceSubscriber(t, g, updatesA), resourceSubscriber(t, g, updatesB)
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
	g := gatewayOver(t, s, "")
	updated := make(chan string, 4)
	cs := resourceSubscriber(t, g, updated)
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
	s := resourceUpstream(t, uri)
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	g := gatewayOver(t, s, "")
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
	s := resourceUpstream(t, uri)
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	g := gatewayOver(t, s, "")
	cs := connectMCP(t, g, nil)
	if v := cs.InitializeResult().ProtocolVersion; v < mcpwire.StatelessProtocol {
		t.Fatalf("the client speaks %s, want %s or later", v, mcpwire.StatelessProtocol)
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
	g := gatewayOver(t, s, "")
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

// TestSubscriptionsSurviveAnUpstreamRestart: when reach reconnects to an
// upstream that restarted (its subscriptions gone with the old session),
// it subscribes the new session again, so the client that subscribed
// before, and one that subscribes after, hear of updates.
func TestSubscriptionsSurviveAnUpstreamRestart(t *testing.T) {
	const uri = "file:///notes.txt"
	s1 := resourceUpstream(t, uri)
	addTaggedTool(s1, "v1", "echo")
	g, restart := restartableUpstream(t, s1)
	updates := make(chan string, 8)
	a := resourceSubscriber(t, g, updates)
	if err := a.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	s2 := resourceUpstream(t, uri)
	addTaggedTool(s2, "v2", "echo")
	restart(s2, connectMCP(t, g, nil))
	b := resourceSubscriber(t, g, updates)
	if err := b.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	// The new session is subscribed again in the background: update until
	// both clients have heard.
	heard := 0
	deadline := time.After(10 * time.Second)
	for heard < 2 {
		s2.ResourceUpdated(t.Context(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
		select {
		case <-updates:
			heard++
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%d of the 2 subscribed clients heard of the restarted upstream's update", heard)
		}
	}
}

// TestSubscriptionWatchersDoNotPileUp: a client that subscribes and
// unsubscribes again and again leaves no goroutine behind each time.
func TestSubscriptionWatchersDoNotPileUp(t *testing.T) {
	const uri = "file:///notes.txt"
	s := resourceUpstream(t, uri)
	g := gatewayOver(t, s, "")
	cs := resourceSubscriber(t, g, make(chan string, 1))
	cycle := func() {
		if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		if err := cs.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	cycle()
	before := runtime.NumGoroutine()
	for range 100 {
		cycle()
	}
	if after := runtime.NumGoroutine(); after > before+20 {
		t.Errorf("100 subscribe/unsubscribe cycles took the goroutines from %d to %d", before, after)
	}
}

// TestResourceOfTwoUpstreamsStays: a resource two upstreams list stays
// listed when one of them drops it, and is read from the other.
func TestResourceOfTwoUpstreamsStays(t *testing.T) {
	const uri = "file:///shared.txt"
	serve := func(text string) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: text, Version: "1"}, nil)
		s.AddResource(&mcp.Resource{URI: uri, Name: "shared"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: text}}}, nil
		})
		up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
		t.Cleanup(up.Close)
		t.Setenv("UP_"+strings.ToUpper(text), up.URL)
		return s
	}
	a := serve("a")
	serve("b")
	// b first: a mirrors last, so the resource is read from a until a
	// drops it.
	cfg, err := config.Parse([]byte("upstreams:\n  - {name: b, url: '"+os.Getenv("UP_B")+"'}\n  - {name: a, url: '"+os.Getenv("UP_A")+"'}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	cs := connectMCP(t, g, nil)
	read := func() string {
		res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(res.Contents) == 0 {
			return fmt.Sprint("error: ", err)
		}
		return res.Contents[0].Text
	}
	if got := read(); got != "a" {
		t.Fatalf("the resource before a dropped it reads %q, want a's", got)
	}
	a.RemoveResources(uri)
	waitUntil(t, "the resource to be read from b", func() bool { return read() == "b" })
	list, err := cs.ListResources(t.Context(), nil)
	if err != nil || len(list.Resources) != 1 {
		t.Errorf("resources after a dropped its copy: %v %v, want b's", list, err)
	}
}

// TestHungResourceListDoesNotStopMirroring: an upstream whose
// resources/list never answers once holds the mirror only for the
// upstream's timeout: a later change is still mirrored.
func TestHungResourceListDoesNotStopMirroring(t *testing.T) {
	var lists atomic.Int32
	hang := make(chan struct{})
	s := mcp.NewServer(&mcp.Implementation{Name: "res", Version: "1"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "resources/list" && lists.Add(1) == 2 {
				<-hang // the second list never answers
			}
			return next(ctx, method, req)
		}
	})
	add := func(uri string) {
		s.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: uri}}}, nil
		})
	}
	add("file:///a")
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(hang) }) // before the upstream closes: it waits for its handlers
	cfg, err := config.Parse([]byte("upstreams:\n  - {name: res, url: '"+up.URL+"', timeout: 300ms}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	cs := connectMCP(t, g, nil)
	add("file:///b") // its list hangs
	waitUntil(t, "the hung list", func() bool { return lists.Load() >= 2 })
	add("file:///c")
	waitUntil(t, "file:///c to be mirrored", func() bool {
		res, err := cs.ListResources(t.Context(), nil)
		if err != nil {
			return false
		}
		for _, r := range res.Resources {
			if r.URI == "file:///c" {
				return true
			}
		}
		return false
	})
}

// TestRestartedUpstreamWithoutResources: an upstream that comes back
// without the resources capability has its resources taken off the
// gateway, not left listed with reads that fail.
func TestRestartedUpstreamWithoutResources(t *testing.T) {
	const uri = "file:///notes.txt"
	s1 := resourceUpstream(t, uri)
	addTaggedTool(s1, "v1", "echo")
	g, restart := restartableUpstream(t, s1)
	cs := connectMCP(t, g, nil)
	if list, err := cs.ListResources(t.Context(), nil); err != nil || len(list.Resources) != 1 {
		t.Fatalf("resources before the restart: %v %v", list, err)
	}
	s2 := mcp.NewServer(&mcp.Implementation{Name: "tools-only", Version: "2"}, nil)
	addTaggedTool(s2, "v2", "echo")
	restart(s2, cs)
	waitUntil(t, "the gone resource to leave", func() bool {
		list, err := cs.ListResources(t.Context(), nil)
		return err == nil && len(list.Resources) == 0
	})
}

// TestSlowSubscribeHoldsOnlyItsResource: while an upstream takes its time
// to answer one resource's subscribe, another resource's subscribe is
// answered.
func TestSlowSubscribeHoldsOnlyItsResource(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	defer close(release) // before the cleanups: the gateway and the upstream wait for the slow answer
	s := mcp.NewServer(&mcp.Implementation{Name: "res", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			if req.Params.URI == "file:///slow" {
				entered <- struct{}{}
				<-release
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	for _, uri := range []string{"file:///slow", "file:///notes.txt"} {
		s.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "hi"}}}, nil
		})
	}
	g := gatewayOver(t, s, "30s")
	a := resourceSubscriber(t, g, make(chan string, 1))
	b := resourceSubscriber(t, g, make(chan string, 1))
	slow := make(chan error, 1)
	go func() { slow <- a.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "file:///slow"}) }()
	<-entered // a's subscribe is at the upstream
	if err := b.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "file:///notes.txt"}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-slow:
		t.Errorf("the slow subscribe ended (%v) before the other was answered: the other waited for it", err)
	default:
	}
}

// restartableUpstream serves s as the upstream "res" (on an address of its
// own) of a new gateway. restart stops it, serves s2 on the same address
// (its tool echo answers "v2: echo"), and makes a call through cs, which
// reconnects the gateway to it.
func restartableUpstream(t *testing.T, s *mcp.Server) (*Gateway, func(s2 *mcp.Server, cs *mcp.ClientSession)) {
	t.Helper()
	serve := func(s *mcp.Server, ln net.Listener) *http.Server {
		srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return srv
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv := serve(s, ln)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: res\n    url: http://"+addr+"\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	return g, func(s2 *mcp.Server, cs *mcp.ClientSession) {
		t.Helper()
		srv.Close()
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("the address was taken meanwhile: %v", err)
		}
		serve(s2, ln)
		if _, text := callText(t, cs, "res__echo", map[string]any{}, nil); text != "v2: echo" {
			t.Fatalf("the call after the restart = %q", text)
		}
	}
}

// gatewayOver is a gateway with s as its upstream "res" (over Streamable
// HTTP), with the upstream timeout given, if any ("300ms").
func gatewayOver(t *testing.T, s *mcp.Server, timeout string) *Gateway {
	t.Helper()
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	entry := "{name: res, url: '" + up.URL + "'}"
	if timeout != "" {
		entry = "{name: res, url: '" + up.URL + "', timeout: " + timeout + "}"
	}
	cfg, err := config.Parse([]byte("upstreams:\n  - "+entry+"\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	return newTestGateway(t, cfg)
}
