package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sceneTransport sends every request with the Reach-Scene header it holds,
// if any.
type sceneTransport struct{ scene *atomic.Pointer[string] }

func (t sceneTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if s := t.scene.Load(); s != nil {
		r = r.Clone(r.Context())
		r.Header.Set(link.HeaderScene, *s)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestSceneHeaderOverMCP: the call that begins a request over /mcp names
// its scene with the Reach-Scene header as with _meta reach/scene, on a
// session the fast lane answers, on one the SDK answers (a client that can
// sample) and sessionless (2026-07-28): a policy that forbids in the scene
// chitchat decides by the header. _meta's scene wins over the header's, and
// a call whose _meta names a new request but no scene takes the header's.
// Before, the header was read only to refuse a malformed one: the call ran
// in no scene and the forbid let it through.
func TestSceneHeaderOverMCP(t *testing.T) {
	pols, err := policy.Parse(policy.Source{Name: "scene.cedar", Text: []byte(`
permit (principal, action, resource);
@reason("no tools in small talk")
forbid (principal, action, resource) when { context.scene == "chitchat" };
`)})
	if err != nil {
		t.Fatal(err)
	}
	echo := reach.Tool{Name: "echo", Access: reach.Read, Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		return args, nil
	}}
	s, srv, _, _ := review6ServerOpts(t, &reach.Options{Authorizer: policy.New(&policy.Options{Policies: pols})}, echo)

	tests := []struct {
		name, header string
		meta         map[string]any
		refused      bool
	}{
		{"the header's scene", "chitchat", nil, true},
		{"no scene", "", nil, false},
		{"another scene", "work", nil, false},
		{"_meta's scene over the header's", "chitchat", map[string]any{link.MetaScene: "work"}, false},
		{"_meta's scene, no header", "", map[string]any{link.MetaScene: "chitchat"}, true},
		{"a new request named in _meta, the header's scene", "chitchat", map[string]any{link.MetaRequest: "fresh"}, true},
	}
	// What each way of calling answered: refused (by the forbid) or not.
	check := func(t *testing.T, way string, refused bool, res *mcp.CallToolResult, fast, wantFast bool) {
		t.Helper()
		text := ""
		if len(res.Content) == 1 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		if res.IsError != refused || refused && !strings.Contains(text, "no tools in small talk") {
			t.Errorf("%s: isError %v %q; want refused %v by the scene's forbid", way, res.IsError, text, refused)
		}
		if fast != wantFast {
			t.Errorf("%s: answered by the fast lane %v, want %v", way, fast, wantFast)
		}
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The _meta of a call by way w: a new request is new to each.
			metaOf := func(w string) map[string]any {
				meta := map[string]any{}
				for k, v := range tt.meta {
					if v == "fresh" {
						v = fmt.Sprintf("fresh-%d-%s", i, w)
					}
					meta[k] = v
				}
				return meta
			}
			// Stateful: a session the fast lane answers, and one the SDK
			// answers (its client can sample). A session's calls share a
			// request: each case opens its own.
			for _, sdk := range []bool{false, true} {
				var scene atomic.Pointer[string]
				var opts *mcp.ClientOptions
				if sdk {
					opts = &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
						return nil, errors.New("no model here")
					}}
				}
				c := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("scene-%d-%v", i, sdk), Version: "1"}, opts)
				cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true,
					HTTPClient: &http.Client{Transport: sceneTransport{&scene}}},
					&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
				if err != nil {
					t.Fatal(err)
				}
				if tt.header != "" {
					scene.Store(&tt.header)
				}
				before := s.fastCalls.Load()
				p := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}
				if meta := metaOf(fmt.Sprint(sdk)); len(meta) > 0 {
					p.Meta = meta
				}
				res, err := cs.CallTool(t.Context(), p)
				cs.Close()
				if err != nil {
					t.Fatalf("sdk %v: %v", sdk, err)
				}
				check(t, fmt.Sprintf("a session (the SDK's: %v)", sdk), tt.refused, res, s.fastCalls.Load() > before, !sdk)
			}

			// Sessionless (2026-07-28): a client (by its clientInfo) has a
			// request of its own.
			h := http.Header{}
			h.Set("Content-Type", "application/json")
			h.Set("Accept", "application/json, text/event-stream")
			h.Set(mcpwire.HeaderProtocol, mcpwire.StatelessProtocol)
			h.Set("Mcp-Method", "tools/call")
			h.Set("Mcp-Name", "echo")
			if tt.header != "" {
				h.Set(link.HeaderScene, tt.header)
			}
			m := map[string]any{metaProtocolVersion: mcpwire.StatelessProtocol, metaClientCapabilities: map[string]any{},
				metaClientInfo: map[string]any{"name": fmt.Sprintf("sessionless-%d", i), "version": "1"}}
			for k, v := range metaOf("sessionless") {
				m[k] = v
			}
			mj, _ := json.Marshal(m)
			before := s.fastCalls.Load()
			code, got := postHTTP(s, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":`+string(mj)+`}}`)
			var ans struct{ Result *mcp.CallToolResult }
			if code != http.StatusOK || json.Unmarshal(got, &ans) != nil || ans.Result == nil {
				t.Fatalf("sessionless: %d %s", code, got)
			}
			check(t, "sessionless", tt.refused, ans.Result, s.fastCalls.Load() > before, true)
		})
	}

	// The header read for the scene of a call whose _meta links it is
	// refused when malformed, as one read to link the call is.
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set(mcpwire.HeaderProtocol, mcpwire.StatelessProtocol)
	h.Set("Mcp-Method", "tools/call")
	h.Set("Mcp-Name", "echo")
	h.Set(link.HeaderScene, "no such scene!")
	m, _ := json.Marshal(map[string]any{metaProtocolVersion: mcpwire.StatelessProtocol, metaClientCapabilities: map[string]any{},
		metaClientInfo: map[string]any{"name": "malformed", "version": "1"}, link.MetaRequest: "malformed"})
	_, got := postHTTP(s, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":`+string(m)+`}}`)
	var ans struct {
		Error *struct{ Data struct{ Code string } }
	}
	if json.Unmarshal(got, &ans) != nil || ans.Error == nil || ans.Error.Data.Code != "bad_scene" {
		t.Errorf("a malformed Reach-Scene beside _meta reach/request: %s; want a protocol error, bad_scene", got)
	}
}
