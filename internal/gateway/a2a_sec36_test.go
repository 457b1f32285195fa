package gateway

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestSec36A2AUnauthenticatedRefused (holds): with auth on, every A2A
// method and path of an agent (1.0 and 0.3, with and without the trailing
// slash, the streaming ones too) is refused 401 to a caller with no key,
// a key reach never issued, or a revoked key, before it runs: the agent
// gets no call of it.
func TestSec36A2AUnauthenticatedRefused(t *testing.T) {
	var posts atomic.Int32
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		http.NotFound(w, r)
	}))
	defer agent.Close()
	_, url, _, keys := authGateway(t, "agents:\n  - {name: executor, url: "+agent.URL+"}\n")
	bodies := map[string]string{
		"SendMessage":           `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}}`,
		"SendStreamingMessage":  `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}}`,
		"GetTask":               `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t-1"}}`,
		"ListTasks":             `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`,
		"CancelTask":            `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"t-1"}}`,
		"SubscribeToTask":       `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"t-1"}}`,
		"message/send (0.3)":    `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"x"}]}}}`,
		"tasks/resubscribe 0.3": `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":"t-1"}}`,
	}
	callers := map[string]string{"no key": "", "a key reach never issued": "Bearer rk_not-a-key-of-reach", "a revoked key": "Bearer " + keys["carol"]}
	for who, authz := range callers {
		for method, body := range bodies {
			for _, p := range []string{"/a2a/executor", "/a2a/executor/"} {
				h := map[string]string{"Content-Type": "application/json", "A2A-Version": "1.0"}
				if authz != "" {
					h["Authorization"] = authz
				}
				if code, out := do(t, "POST", url+p, body, h); code != http.StatusUnauthorized {
					t.Errorf("%s from a caller with %s at %s: %d %v, want 401", method, who, p, code, out)
				}
			}
		}
		h := map[string]string{}
		if authz != "" {
			h["Authorization"] = authz
		}
		if code, _ := do(t, "GET", url+"/a2a/executor/.well-known/agent-card.json", "", h); code != http.StatusUnauthorized {
			t.Errorf("the card to a caller with %s: %d, want 401", who, code)
		}
	}
	if n := posts.Load(); n != 0 {
		t.Errorf("the agent got %d calls of unauthenticated callers", n)
	}
}
