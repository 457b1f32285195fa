package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/auth"
)

// TestRequestRefusesOtherCredentialsOfItsPrincipal: a request's calls are
// checked against the roles and attributes of the credentials that began
// it. A request was owned by a principal and tenant alone, so alice's key
// of role billing began request r, and alice's key of no role (or the
// billing key once revoked, through another of hers) then called into r a
// tool that policy keeps for billing: it ran. Now a call into r under
// credentials of other roles is refused 403 other_credentials, and the
// same call in a request of its own is what the policy says of it.
func TestRequestRefusesOtherCredentialsOfItsPrincipal(t *testing.T) {
	data := t.TempDir()
	keys, err := auth.OpenKeys(auth.KeysPath(data))
	if err != nil {
		t.Fatal(err)
	}
	billing, _, err := keys.Create(auth.KeySpec{Principal: "alice", Tenant: "acme", Roles: []string{"billing"}})
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := keys.Create(auth.KeySpec{Principal: "alice", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, "examples: true\nauth: {keys: true}\ndata: "+data+"\npolicy: {path: ./p.cedar}\n")
	if err := os.WriteFile(filepath.Join(filepath.Dir(cfg), "p.cedar"), []byte(`permit (principal, action, resource);
@reason("get_order is for billing")
forbid (principal, action, resource == Reach::Tool::"get_order") unless { principal.roles.contains("billing") };
`), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _, _ := startServe(t, "--config", cfg, "--listen", "127.0.0.1:0")
	call := func(key, request, callID string) (int, string) {
		body := `{"tool_calls":[{"call_id":"` + callID + `","tool":"get_order","arguments":{"order_id":"1001"}}]`
		if request != "" {
			body += `,"request_id":"` + request + `"`
		}
		req, _ := http.NewRequest("POST", base+"/v1/calls", strings.NewReader(body+"}"))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call(billing, "r_billing", "c1"); code != 200 || strings.Contains(body, "for billing") {
		t.Fatalf("the billing key's get_order in r_billing: %d %s", code, body)
	}
	if code, body := call(plain, "", "c2"); !strings.Contains(body, "get_order is for billing") {
		t.Fatalf("the key of no role's get_order in a request of its own: %d %s, want the policy's refusal", code, body)
	}
	code, body := call(plain, "r_billing", "c3")
	if code != http.StatusForbidden || !strings.Contains(body, "other_credentials") {
		t.Errorf("the key of no role's get_order in the billing key's request: %d %s, want 403 other_credentials", code, body)
	}
	if strings.Contains(body, `"order_id"`) || strings.Contains(body, "1001") && !strings.Contains(body, "other_credentials") {
		t.Errorf("the key of no role's call ran in the billing key's request: %s", body)
	}

	// An MCP session the billing key opened: the key of no role's call
	// on it is refused, a tool result with isError the model reads.
	mcpPost := func(key, session, body string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		req.Header.Set("Authorization", "Bearer "+key)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, _ := mcpPost(billing, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize with the billing key: %s, no session", resp.Status)
	}
	mcpPost(billing, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	const getOrder = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_order","arguments":{"order_id":"1001"}}}`
	if _, body := mcpPost(billing, session, getOrder); !strings.Contains(body, "Ada") {
		t.Fatalf("the billing key's get_order in its session: %s", body)
	}
	_, body = mcpPost(plain, session, getOrder)
	if strings.Contains(body, "Ada") || !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "other roles") {
		t.Errorf("the key of no role's get_order in the billing key's MCP session: %s, want an isError result saying why", body)
	}
}
