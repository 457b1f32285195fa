package front

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// streamKeys sends a GET (the stream) with one API key and every other
// request (the session's messages) with another.
type streamKeys struct{ get, post string }

func (k streamKeys) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if r.Method == http.MethodGet {
		r.Header.Set("X-Reach-Key", k.get)
	} else {
		r.Header.Set("X-Reach-Key", k.post)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestSSESessionRefusesOtherCredentialsOfItsOwner: the messages of an
// HTTP+SSE session (POSTs to the endpoint its stream named) run as who
// opened the stream. Their owner's other key, of other roles, was taken
// as the opener (the same principal and tenant), so its calls ran with the
// opener's roles: a key of no role, or any key of the principal's once the
// opener's was revoked, called as the opener's role allowed. Now its
// POSTs are refused 403 other_credentials, the opener's own are answered.
func TestSSESessionRefusesOtherCredentialsOfItsOwner(t *testing.T) {
	ks, err := auth.OpenKeys(auth.KeysPath(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	billing, _, err := ks.Create(auth.KeySpec{Principal: "alice", Tenant: "acme", Roles: []string{"billing"}})
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := ks.Create(auth.KeySpec{Principal: "alice", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
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
	srv := httptest.NewServer(authn.Middleware(s.Handler()))
	defer srv.Close()

	for _, tc := range []struct {
		name       string
		keys       streamKeys
		refused    bool
		wantCalled bool
	}{
		{"the opener's key", streamKeys{billing, billing}, false, true},
		{"another key of the opener's principal", streamKeys{billing, plain}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mcp.NewClient(&mcp.Implementation{Name: "sse-creds", Version: "1"}, nil)
			cs, err := c.Connect(t.Context(), &mcp.SSEClientTransport{Endpoint: srv.URL + SSEPath, HTTPClient: &http.Client{Transport: tc.keys}}, nil)
			if err != nil {
				if tc.refused {
					return // its initialize was refused: nothing ran
				}
				t.Fatalf("connect over SSE: %v", err)
			}
			defer cs.Close()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "q"}})
			ran := err == nil && !res.IsError
			if ran != tc.wantCalled {
				t.Errorf("a call posted with %s: ran %v (%v %+v), want %v", tc.name, ran, err, res, tc.wantCalled)
			}
		})
	}
}
