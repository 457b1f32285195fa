package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
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

// TestAttack33LogMessageMasksLoggerAndMeta: an upstream's log message
// reaches the client with the secrets masked in its logger's name and its
// _meta as well as in its data: the upstream writes them all as it likes
// (here with the header reach sends it), and only the data was masked.
func TestAttack33LogMessageMasksLoggerAndMeta(t *testing.T) {
	const tok = "sk-log-attack33-0a1b2c3d4e5f"
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			a := req.Extra.Header.Get("Authorization")
			req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "client(" + a + ")",
				Meta: mcp.Meta{"auth": a}, Data: "calling"})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: up\n    url: "+up.URL+"\n    headers: {Authorization: 'Bearer "+tok+"'}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTest(t, newTestGateway(t, cfg))
	logs := make(chan string, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			b, _ := json.Marshal(req.Params)
			logs <- string(b)
		},
	})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if res, text := callText(t, cs, "up__ask", map[string]any{}, nil); res.IsError {
		t.Fatalf("ask: %s", text)
	}
	select {
	case l := <-logs:
		if strings.Contains(l, tok) {
			t.Errorf("the client got the upstream's token in a log message: %s", l)
		}
		if !strings.Contains(l, `"calling"`) || !strings.Contains(l, "client(") {
			t.Errorf("the log message lost what was not secret: %s", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's log message did not reach the client")
	}
}

// TestAttack33UnsubscribeErrorMasked: an upstream's error to an
// unsubscribe reaches the client masked, as its errors to a read, a get,
// a completion and a subscribe do; it went on as the upstream wrote it.
func TestAttack33UnsubscribeErrorMasked(t *testing.T) {
	const tok = "sk-unsub-attack33-9f8e7d6c5b4a"
	const uri = "file:///notes.txt"
	s := mcp.NewServer(&mcp.Implementation{Name: "res", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			return fmt.Errorf("no subscription for %s", req.Extra.Header.Get("Authorization"))
		},
	})
	s.AddResource(&mcp.Resource{URI: uri, Name: "notes"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "hi"}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: res\n    url: "+up.URL+"\n    headers: {Authorization: 'Bearer "+tok+"'}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := resourceSubscriber(t, newTestGateway(t, cfg), make(chan string, 4))
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	err = cs.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: uri})
	if err == nil || !strings.Contains(err.Error(), "no subscription for") {
		t.Fatalf("Unsubscribe: %v, want the upstream's error", err)
	}
	if strings.Contains(err.Error(), tok) {
		t.Errorf("the client got the upstream's token in its error: %v", err)
	}
}

// TestAttack33UnmaskableAnswerNotPassedOn: an upstream's answer to a
// resource read or a prompt get that spells a configured secret in its
// binary data (a blob's base64, an image's) as well as in its text is not
// passed on: masked, the base64 is no base64 and the answer no longer
// decodes, and reach passed on the answer as the upstream wrote it, the
// secret in its text too. The client gets an error that says why.
func TestAttack33UnmaskableAnswerNotPassedOn(t *testing.T) {
	const tok = "sk4upstreamAttack33Key0"
	b64 := tok + strings.Repeat("A", (4-len(tok)%4)%4)
	blob, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	const uri = "file:///mixed"
	s := mcp.NewServer(&mcp.Implementation{Name: "res", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: uri, Name: "mixed"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "key=" + tok}, {URI: uri + "#bin", Blob: blob}}}, nil
	})
	// A binary file that holds the key: the redactor finds it in the
	// blob's base64 and masks it there, which no longer decodes.
	s.AddResource(&mcp.Resource{URI: "file:///app.env", Name: "env", MIMEType: "application/octet-stream"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///app.env", Blob: []byte("DEBUG=0\nAPI_KEY=" + tok + "\n")}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "show"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: "use " + tok}},
			{Role: "user", Content: &mcp.ImageContent{MIMEType: "image/png", Data: blob}}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: res\n    url: "+up.URL+"\n    headers: {Authorization: 'Bearer "+tok+"'}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTest(t, newTestGateway(t, cfg))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	read, rerr := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
	got, gerr := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "res__show"})
	env, eerr := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "file:///app.env"})
	for _, c := range []struct {
		what string
		res  any
		err  error
	}{{"the read", read, rerr}, {"the prompt", got, gerr}, {"the binary file", env, eerr}} {
		b, _ := json.Marshal(c.res)
		if r, ok := c.res.(*mcp.ReadResourceResult); ok && r != nil {
			for _, rc := range r.Contents {
				b = append(b, rc.Blob...) // the blob's bytes, as the client decodes them
			}
		}
		if strings.Contains(string(b), tok) || (c.err != nil && strings.Contains(c.err.Error(), tok)) {
			t.Errorf("%s reached the client with the secret: %s %v", c.what, b, c.err)
		}
		if c.err == nil || !strings.Contains(c.err.Error(), "cannot mask") {
			t.Errorf("%s: %v, want an error that says reach could not mask it", c.what, c.err)
		}
	}
}
