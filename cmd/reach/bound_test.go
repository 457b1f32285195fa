package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAPIRequestsBoundedPerPrincipal: every POST /v1/calls without a
// request id begins a request that runs until idle_gap, and one principal
// could begin any number (10,000 in 30 s held 116 MB more of reach serve).
// Through the binary, with keys: bob's running requests stay within
// sessions_per_principal, his oldest ended; alice's goes on.
func TestAPIRequestsBoundedPerPrincipal(t *testing.T) {
	data := t.TempDir()
	key := func(principal string) string {
		var out strings.Builder
		if err := run(t.Context(), []string{"keys", "create", "--principal", principal, "--tenant", "acme", "--data", data}, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out.String())
	}
	alice, bob := key("alice"), key("bob")
	cfg := writeConfig(t, "auth: {keys: true}\nexamples: true\nsessions_per_principal: 3\n")
	addr := freeAddr(t)
	cmd := startReach(t, cfg, addr, data)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	do := func(key, method, path, body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s %s: %s, %v", method, path, resp.Status, err)
		}
		return m
	}
	const call = `{"tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"kettle"}}]}`
	first := do(alice, "POST", "/v1/calls", call)["request_id"]
	for range 10 {
		do(bob, "POST", "/v1/calls", call)
	}
	running := func(key string) (ids []string) {
		for _, r := range do(key, "GET", "/v1/requests", "")["requests"].([]any) {
			if m := r.(map[string]any); m["state"] == "running" {
				ids = append(ids, m["id"].(string))
			}
		}
		return ids
	}
	if got := running(bob); len(got) != 3 {
		t.Errorf("bob's running requests after 10 calls: %d, want 3 (sessions_per_principal)", len(got))
	}
	if got := running(alice); len(got) != 1 || got[0] != first {
		t.Errorf("alice's running requests: %v, want [%v]", got, first)
	}
}
