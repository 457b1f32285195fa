package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAttack25AskedRequestsMaskedWhole: an upstream's elicitation and
// sampling requests reach the client with the upstream's credential
// masked in every member, not only in the elicitation's message and the
// sampling request's texts: the requested form's field descriptions and
// defaults, a sampling request's metadata,
// model hints and stop sequences. A form field named "password" stays a
// field (only the configured values are masked there, as in a tool's
// schema).
func TestAttack25AskedRequestsMaskedWhole(t *testing.T) {
	const tok = "sk-fx-ASKEDVALUE-1234567890"
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			a := req.Extra.Header.Get("Authorization")
			schema := json.RawMessage(`{"type":"object","properties":{` +
				`"password":{"type":"string","description":"the key, not ` + a + `"},` +
				`"key":{"type":"string","default":"` + a + `"}}}`)
			if _, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "fill in", RequestedSchema: schema}); err != nil {
				return nil, nil, err
			}
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages:         []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}},
				Metadata:         map[string]any{"note": a},
				ModelPreferences: &mcp.ModelPreferences{Hints: []*mcp.ModelHint{{Name: "m " + a}}},
				StopSequences:    []string{a}})
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: up\n    url: "+up.URL+"\n    headers: {Authorization: 'Bearer "+tok+"'}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	var seen []string
	var form map[string]any
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			b, _ := json.Marshal(req.Params)
			seen = append(seen, string(b))
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			b, _ := json.Marshal(req.Params)
			seen = append(seen, string(b))
			var p struct {
				RequestedSchema struct {
					Properties map[string]any `json:"properties"`
				} `json:"requestedSchema"`
			}
			json.Unmarshal(b, &p)
			form = p.RequestedSchema.Properties
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"password": "x", "key": "y"}}, nil
		},
	})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if res, text := callText(t, cs, "up__ask", map[string]any{}, nil); res.IsError {
		t.Fatalf("ask: %s", text)
	}
	if len(seen) != 2 {
		t.Fatalf("the client got %d requests, want an elicitation and a sampling request: %q", len(seen), seen)
	}
	for _, s := range seen {
		if strings.Contains(s, "ASKEDVALUE") || strings.Contains(s, "sk-fx-ASK") {
			t.Errorf("the client got a secret: %s", s)
		}
		if !strings.Contains(s, redact.Mask) {
			t.Errorf("nothing was masked in %s", s)
		}
	}
	if pw, ok := form["password"].(map[string]any); !ok || pw["type"] != "string" {
		t.Errorf("the form's password field is not a field any more: %v", form)
	}
	// The model hint names the sampling's model frame: masked in the views
	// and the audit log as well.
	var list struct {
		Requests []struct{ ID string } `json:"requests"`
	}
	if err := json.Unmarshal([]byte(getBody(t, g, "/v1/requests")), &list); err != nil || len(list.Requests) == 0 {
		t.Fatalf("requests: %v %v", list, err)
	}
	for _, r := range list.Requests {
		for _, s := range []string{getBody(t, g, "/v1/requests/"+r.ID+"/graph?format=json"), getBody(t, g, "/v1/requests/"+r.ID), auditOf(t, g, r.ID)} {
			if strings.Contains(s, "ASKEDVALUE") {
				t.Errorf("request %s shows the secret: %s", r.ID, s)
			}
			if !strings.Contains(s, redact.Mask) {
				t.Errorf("request %s shows no masked model frame: %s", r.ID, s)
			}
		}
	}
}

// TestAttack25NullModelHint: an upstream's sampling request whose model
// hints hold a null ({"hints":[null]}) is relayed as one without a hint;
// it crashed the gateway (a nil hint's name read in the goroutine that
// relays it).
func TestAttack25NullModelHint(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages:         []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}},
				ModelPreferences: &mcp.ModelPreferences{Hints: []*mcp.ModelHint{nil}}})
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("upstreams:\n  - name: up\n    url: "+up.URL+"\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	var hints []string
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			b, _ := json.Marshal(req.Params.ModelPreferences)
			hints = append(hints, string(b))
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
	})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	res, text := callText(t, cs, "up__ask", map[string]any{}, nil)
	if res.IsError || !strings.Contains(text, "sampled") {
		t.Fatalf("ask: %s", text)
	}
	if len(hints) != 1 {
		t.Fatalf("the client got %d sampling requests", len(hints))
	}
}
