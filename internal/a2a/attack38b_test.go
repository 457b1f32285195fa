package a2a

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAttack38bCredentialHeadersNeverReachAgent: the A2A endpoint dropped
// the caller's Authorization and Cookie before the SDK saw the request,
// but not X-Reach-Key, reach's own API key header, nor a
// Proxy-Authorization: any path that passes the SDK's service parameters
// on (to the agent, to a log) passed the caller's key for reach with
// them. None of the headers that carry credentials for reach reaches the
// SDK; the others (the A2A version, reach's linking headers) still do.
func TestAttack38bCredentialHeadersNeverReachAgent(t *testing.T) {
	h := newHarness(t, nil, "executor")
	a := h.g.agents["executor"]
	var got http.Header
	a.rpc = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	})
	r := httptest.NewRequest(http.MethodPost, "/a2a/executor", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-Reach-Key", "rk_attack38b_secret")
	r.Header.Set("x-reach-key", "rk_attack38b_secret")
	r.Header.Set("Authorization", "Bearer rk_attack38b_secret")
	r.Header.Set("Proxy-Authorization", "Basic cHJveHk6c2VjcmV0")
	r.Header.Set("Cookie", "__Host-reach_session=attack38b")
	r.Header.Set("Reach-Request", "req-1")
	h.g.ServeHTTP(httptest.NewRecorder(), r)
	if got == nil {
		t.Fatal("the request never reached the SDK's handler")
	}
	for k, v := range got {
		if strings.Contains(strings.Join(v, ","), "attack38b") || strings.Contains(strings.Join(v, ","), "cHJveHk6c2VjcmV0") {
			t.Errorf("the SDK (and any agent it passes headers to) saw %s: %q", k, v)
		}
	}
	if got.Get("Reach-Request") != "req-1" {
		t.Errorf("reach's linking header was dropped too: %v", got)
	}
}

// TestAttack38bAgentNeverSeesReachKey: through the gateway, end to end, an
// agent sees neither the caller's X-Reach-Key nor its Authorization (the
// harness's callers send both).
func TestAttack38bAgentNeverSeesReachKey(t *testing.T) {
	h := newHarness(t, nil, "executor")
	h.send("executor", "alice", "echo hi", nil)
	sends := h.agents["executor"].seen()
	if len(sends) == 0 {
		t.Fatal("the agent got no message")
	}
	for _, s := range sends {
		if s.auth != "" || s.reachKey != "" {
			t.Errorf("the agent saw the caller's credentials: Authorization %q, X-Reach-Key %q", s.auth, s.reachKey)
		}
	}
}
