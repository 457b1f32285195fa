package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// contentUpstream serves two resources, a resource template, a prompt and
// completions, and counts what it is asked.
func contentUpstream(t *testing.T, asked *atomic.Int32) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			asked.Add(1)
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"world"}}}, nil
		},
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error {
			asked.Add(1)
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	for _, uri := range []string{"doc://public", "doc://secret"} {
		s.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			asked.Add(1)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "text of " + req.Params.URI}}}, nil
		})
	}
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "doc://pages/{n}", Name: "pages"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		asked.Add(1)
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "page"}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		asked.Add(1)
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	return up
}

const contentPolicies = `
@id("alice-docs")
permit (principal == Reach::Principal::"alice",
        action in [Reach::Action::"read_resource", Reach::Action::"get_prompt", Reach::Action::"complete"],
        resource in Reach::Upstream::"docs");

@id("no-secret")
@reason("the secret document stays upstream")
forbid (principal, action, resource == Reach::Resource::"doc://secret");
`

// TestContentUnderPolicies: with auth and policies, an upstream's
// resources, prompts and completions are asked of the policies. bob, whom
// no policy permits them, is refused each with a JSON-RPC error that names
// what and how to allow it, the upstream never asked, and his listings are
// empty; alice reads what a permit allows and no forbid takes back, and
// her listings leave out the forbidden resource.
func TestContentUnderPolicies(t *testing.T) {
	var asked atomic.Int32
	up := contentUpstream(t, &asked)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.cedar")
	if err := os.WriteFile(pol, []byte(contentPolicies), 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, name := range []string{"alice", "bob"} {
		if keys[name], _, err = ks.Create(auth.KeySpec{Principal: name}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse([]byte("data: "+dir+"\nauth: {keys: true}\npolicy: {path: "+pol+"}\n"+
		"upstreams:\n  - {name: docs, url: '"+up.URL+"'}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTest(t, newTestGateway(t, cfg)).URL
	ctx := t.Context()

	bob, err := mcpAs(t, url, keys["bob"])
	if err != nil {
		t.Fatal(err)
	}
	before := asked.Load()
	refused := func(what string, err error) {
		t.Helper()
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != codeRefused {
			t.Errorf("bob's %s: %v, want a JSON-RPC error %d", what, err, codeRefused)
			return
		}
		for _, want := range []string{`"bob"`, "no policy permits it", "permit (principal =="} {
			if !strings.Contains(je.Message, want) {
				t.Errorf("bob's %s refused with %q, which lacks %q", what, je.Message, want)
			}
		}
	}
	_, err = bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doc://public"})
	refused("resources/read", err)
	_, err = bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doc://pages/3"})
	refused("resources/read of a template", err)
	_, err = bob.GetPrompt(ctx, &mcp.GetPromptParams{Name: "docs__greet"})
	refused("prompts/get", err)
	_, err = bob.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "docs__greet"},
		Argument: mcp.CompleteParamsArgument{Name: "who", Value: "w"}})
	refused("completion/complete", err)
	bobOld := sessionAs(t, url, keys["bob"]) // resources/subscribe is a request of this protocol
	refused("resources/subscribe", bobOld.Subscribe(ctx, &mcp.SubscribeParams{URI: "doc://public"}))
	if n := asked.Load() - before; n != 0 {
		t.Errorf("the upstream was asked %d times for bob", n)
	}
	if got := listed(t, bob); got != "" {
		t.Errorf("bob's listings: %q, want nothing", got)
	}

	alice, err := mcpAs(t, url, keys["alice"])
	if err != nil {
		t.Fatal(err)
	}
	res, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doc://public"})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "text of doc://public" {
		t.Fatalf("alice's read: %v, %v", res, err)
	}
	if _, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doc://pages/3"}); err != nil {
		t.Errorf("alice's read of a templated resource: %v", err)
	}
	if pr, err := alice.GetPrompt(ctx, &mcp.GetPromptParams{Name: "docs__greet"}); err != nil || len(pr.Messages) != 1 {
		t.Errorf("alice's prompt: %v, %v", pr, err)
	}
	if c, err := alice.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "docs__greet"},
		Argument: mcp.CompleteParamsArgument{Name: "who", Value: "w"}}); err != nil || !slices.Contains(c.Completion.Values, "world") {
		t.Errorf("alice's completion: %v, %v", c, err)
	}
	if err := sessionAs(t, url, keys["alice"]).Subscribe(ctx, &mcp.SubscribeParams{URI: "doc://public"}); err != nil {
		t.Errorf("alice's subscription: %v", err)
	}
	// With the upstream subscribed for alice already, bob's subscription
	// would ride on hers without asking the upstream: it is refused all
	// the same. A completion of a resource template's argument is asked
	// as the template.
	before = asked.Load()
	refused("resources/subscribe to a resource the upstream sends already", bobOld.Subscribe(ctx, &mcp.SubscribeParams{URI: "doc://public"}))
	_, err = bob.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "doc://pages/{n}"},
		Argument: mcp.CompleteParamsArgument{Name: "n", Value: "1"}})
	refused("completion/complete of a resource template", err)
	if n := asked.Load() - before; n != 0 {
		t.Errorf("the upstream was asked %d times for bob", n)
	}
	if c, err := alice.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "doc://pages/{n}"},
		Argument: mcp.CompleteParamsArgument{Name: "n", Value: "1"}}); err != nil || !slices.Contains(c.Completion.Values, "world") {
		t.Errorf("alice's completion of a resource template: %v, %v", c, err)
	}
	before = asked.Load()
	_, err = alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doc://secret"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != codeRefused || !strings.Contains(je.Message, "the secret document stays upstream") {
		t.Errorf("alice's read of the forbidden resource: %v", err)
	}
	if asked.Load() != before {
		t.Error("the upstream was asked for the forbidden resource")
	}
	if got, want := listed(t, alice), "doc://public;doc://pages/{n};docs__greet"; got != want {
		t.Errorf("alice's listings: %q, want %q", got, want)
	}
}

// TestContentZeroConfig: without auth or policies, resources and prompts
// pass through as they are, all of them listed.
func TestContentZeroConfig(t *testing.T) {
	var asked atomic.Int32
	up := contentUpstream(t, &asked)
	cfg, err := config.Parse([]byte("upstreams:\n  - {name: docs, url: '"+up.URL+"'}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTest(t, newTestGateway(t, cfg)).URL
	cs, err := mcpAs(t, url, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "doc://secret"})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "text of doc://secret" {
		t.Fatalf("read: %v, %v", res, err)
	}
	if _, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "docs__greet"}); err != nil {
		t.Errorf("prompt: %v", err)
	}
	if got, want := listed(t, cs), "doc://public,doc://secret;doc://pages/{n};docs__greet"; got != want {
		t.Errorf("listings: %q, want %q", got, want)
	}
}

// sessionAs connects a go-sdk client to /mcp with a token on the session
// protocol.
func sessionAs(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, &mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// listed is a client's resources, resource templates and prompts, each
// list sorted, joined by ";".
func listed(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	var rs, ts, ps []string
	for r, err := range cs.Resources(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r.URI)
	}
	for r, err := range cs.ResourceTemplates(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, r.URITemplate)
	}
	for p, err := range cs.Prompts(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p.Name)
	}
	slices.Sort(rs)
	out := strings.Join([]string{strings.Join(rs, ","), strings.Join(ts, ","), strings.Join(ps, ",")}, ";")
	if out == ";;" {
		return ""
	}
	return out
}

// TestContentDefaultPolicies: with auth and no policy file, the shipped
// defaults permit an authenticated principal an upstream's resources and
// prompts, as they permit its read tools.
func TestContentDefaultPolicies(t *testing.T) {
	var asked atomic.Int32
	up := contentUpstream(t, &asked)
	dir := t.TempDir()
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := ks.Create(auth.KeySpec{Principal: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("data: "+dir+"\nauth: {keys: true}\nupstreams:\n  - {name: docs, url: '"+up.URL+"'}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcpAs(t, serveTest(t, newTestGateway(t, cfg)).URL, key)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "doc://secret"}); err != nil || len(res.Contents) != 1 {
		t.Fatalf("read under the defaults: %v, %v", res, err)
	}
	if got, want := listed(t, cs), "doc://public,doc://secret;doc://pages/{n};docs__greet"; got != want {
		t.Errorf("listings under the defaults: %q, want %q", got, want)
	}
}
