package front

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// authServer returns a server whose clients authenticate with API keys
// (alice@acme, alice@globex, bob@globex), with one tool, echo, and the
// authenticator.
func authServer(t *testing.T) (*Server, *auth.Authenticator, map[string]string) {
	t.Helper()
	ks, err := auth.OpenKeys(auth.KeysPath(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for name, spec := range map[string]auth.KeySpec{
		"alice@acme":   {Principal: "alice", Tenant: "acme"},
		"alice@globex": {Principal: "alice", Tenant: "globex"},
		"bob@globex":   {Principal: "bob", Tenant: "globex"},
	} {
		if keys[name], _, err = ks.Create(spec); err != nil {
			t.Fatal(err)
		}
	}
	authn := auth.New(&auth.Options{Keys: ks})
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "echo", Access: reach.Read, Reentrancy: reach.Reentrant,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }})
	life, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	owned := link.NewOwned(life, rt, time.Minute, link.Budgets{})
	t.Cleanup(owned.EndAll)
	s := New(&Options{Runtime: rt, Owned: owned, Choices: &link.ModelChoices{}, Authn: authn, Tools: allTools{rt}, Levels: &Levels{}})
	s.SyncTools()
	t.Cleanup(s.Close)
	return s, authn, keys
}

// allTools shows every tool to everyone.
type allTools struct{ rt *reach.Runtime }

func (a allTools) Visible(*auth.Identity) []reach.Tool { return a.rt.Tools() }
func (allTools) Narrows() bool                         { return false }

// TestSDKSessionCheckSeesTheCaller: bindSessions gives the SDK's
// Streamable HTTP handler the caller as TokenInfo, so that the SDK itself
// refuses another identity's requests on a session, without the gateway's
// own check in front of it; the client's Authorization header is as it
// sent it behind.
func TestSDKSessionCheckSeesTheCaller(t *testing.T) {
	s, authn, keys := authServer(t)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.MCP() }, nil)
	srv := httptest.NewServer(authn.Middleware(s.bindSessions(sdk)))
	defer srv.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "owner", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL,
		HTTPClient: &http.Client{Transport: keyTransport{"X-Reach-Key", keys["alice@acme"]}}}, &mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, who := range []string{"alice@globex", "bob@globex"} {
		for _, method := range []string{"GET", "DELETE"} {
			req, _ := http.NewRequest(method, srv.URL, nil)
			req.Header.Set("X-Reach-Key", keys[who])
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set(mcpwire.HeaderSession, cs.ID())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s: %s on alice@acme's session through the SDK = %d, want 403", who, method, resp.StatusCode)
			}
		}
	}
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "q"}}); err != nil || res.IsError {
		t.Errorf("the owner's session no longer answers: %v %+v", err, res)
	}

	var seen *sdkauth.TokenInfo
	var authz []string
	h := s.bindSessions(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		seen, authz = sdkauth.TokenInfoFromContext(r.Context()), r.Header.Values("Authorization")
	}))
	id := &auth.Identity{Principal: "alice", Tenant: "acme"}
	for _, sent := range [][]string{nil, {"Bearer rk_x"}, {"Basic Zm9vOmJhcg=="}} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header["Authorization"] = sent
		h.ServeHTTP(httptest.NewRecorder(), r.WithContext(auth.WithIdentity(r.Context(), id)))
		if seen == nil || seen.UserID != sessionOwner(id) {
			t.Errorf("Authorization %q: the SDK sees TokenInfo %+v, want user %s", sent, seen, sessionOwner(id))
		}
		if strings.Join(authz, ",") != strings.Join(sent, ",") {
			t.Errorf("Authorization %q: the handler behind sees %q", sent, authz)
		}
	}
}

// keyTransport sends every request with an API key, in the header named.
type keyTransport struct{ header, value string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(k.header, k.value)
	return http.DefaultTransport.RoundTrip(r)
}

// TestClientsPerOwner: of one owner's sessionless clients (by clientInfo)
// MaxSessions are kept apart, each in a request of its own; its others
// share one request, another owner's are its own, and clients forgotten
// (their idle gap passed, swept) make room again.
func TestClientsPerOwner(t *testing.T) {
	rt := reach.New(nil)
	life, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// A client without a request is forgotten at the first sweep.
	owned := link.NewOwned(life, rt, time.Nanosecond, link.Budgets{})
	t.Cleanup(owned.EndAll)
	const max = 3
	s := New(&Options{Runtime: rt, Owned: owned, Choices: &link.ModelChoices{}, Tools: allTools{rt}, Levels: &Levels{}, MaxSessions: max})
	t.Cleanup(s.Close)
	alice, bob := &auth.Identity{Principal: "alice", Tenant: "acme"}, &auth.Identity{Principal: "bob", Tenant: "globex"}
	var kept []*session
	for i := range max {
		kept = append(kept, s.clientSession(alice, fmt.Sprint("c", i), "1"))
	}
	if s.clientSession(alice, "c0", "1") != kept[0] {
		t.Error("a client kept is not found again")
	}
	over := s.clientSession(alice, "c3", "1")
	if slices.Contains(kept, over) || s.clientSession(alice, "c4", "1") != over {
		t.Error("alice's clients past the bound do not share one request")
	}
	if b := s.clientSession(bob, "c3", "1"); b == over || slices.Contains(kept, b) || s.clientSession(bob, "c4", "1") == b {
		t.Error("bob's clients are not his own")
	}
	s.SweepClients()
	if c := s.clientSession(alice, "c5", "1"); c == over || slices.Contains(kept, c) {
		t.Error("a client after the others were forgotten shares a request")
	}
}
