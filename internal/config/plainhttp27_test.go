package config

import (
	"strings"
	"testing"
)

// TestPlainHTTPOffLoopbackRefused: a key that goes to a plain http://
// URL of another host crosses the network in the clear, so a model
// base_url (with api_key, or with the client's key passed on when reach
// authenticates nobody), a fallback with api_key and an upstream with
// headers there are refused, each error naming its line and
// allow_plain_http (and a key in the query of a URL, an agent's too,
// which the error does not quote); that opt-in, https and loopback are taken, and an
// endpoint no key goes to is taken as before.
func TestPlainHTTPOffLoopbackRefused(t *testing.T) {
	const key = "sk-plain-http-key-4242"
	vars := env(map[string]string{"K": key})
	const auth = "auth: {keys: true}\nlisten: 127.0.0.1:0\n"
	refused := []struct{ name, yaml, line string }{
		{"model with api_key", "model:\n  name: m\n  base_url: http://10.0.0.5:8000/v1\n  api_key: ${K}\n", "line 3"},
		{"model without a key, nobody authenticated", "model:\n  base_url: http://gpu-box:8000/v1\n", "line 2"},
		{"model on a public name", "model:\n  base_url: http://api.example.com/v1\n  api_key: ${K}\n", "line 2"},
		{"model on an IPv6 host", "model:\n  base_url: 'http://[2001:db8::1]:8000/v1'\n  api_key: ${K}\n", "line 2"},
		{"model with a loopback-looking name", "model:\n  base_url: http://127.0.0.1.nip.io/v1\n  api_key: ${K}\n", "line 2"},
		{"model scheme in capitals", "model:\n  base_url: HTTP://10.0.0.5/v1\n  api_key: ${K}\n", "line 2"},
		{"fallback with api_key", "model:\n  base_url: https://api.example.com/v1\n  api_key: ${K}\n  fallbacks:\n    - base_url: http://10.0.0.6/v1\n      api_key: ${K}\n", "line 5"},
		{"upstream with headers", "upstreams:\n  - name: a\n    url: http://10.0.0.7:9000/mcp\n    headers: {Authorization: \"Bearer ${K}\"}\n", "line 3"},
		{"upstream with a key in its query", "upstreams:\n  - name: a\n    url: 'http://10.0.0.7:9000/mcp?api_key=" + key + "'\n", "line 3"},
		{"model with a key in its query", "auth: {keys: true}\nmodel:\n  base_url: 'http://10.0.0.5/v1?key=" + key + "'\n", "line 3"},
		{"fallback with a key in its query", "model:\n  base_url: https://a.example/v1\n  fallbacks:\n    - {base_url: 'http://10.0.0.6/v1?subscription-key=" + key + "'}\n", "line 4"},
		{"agent with a key in its query", "agents:\n  - {name: ex, url: 'http://10.0.0.8:9002/a2a?key=" + key + "'}\n", "line 2"},
		{"upstream on 0.0.0.0", "upstreams:\n  - name: a\n    url: http://0.0.0.0:9000/mcp\n    headers: {X-Api-Key: \"${K}\"}\n", "line 3"},
	}
	for _, tc := range refused {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), vars)
			if err == nil {
				t.Fatal("Parse took it")
			}
			for _, w := range []string{tc.line, "plain http", "allow_plain_http: true", "https://"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("error %q quotes the key", err)
			}
		})
	}
	taken := []struct{ name, yaml string }{
		{"model opted in", "model:\n  base_url: http://10.0.0.5:8000/v1\n  api_key: ${K}\n  allow_plain_http: true\n"},
		{"model without a key, clients authenticated", auth + "model:\n  base_url: http://10.0.0.5:8000/v1\n"},
		{"model on https", "model:\n  base_url: https://10.0.0.5/v1\n  api_key: ${K}\n"},
		{"model on loopback", "model:\n  base_url: http://127.0.0.2:8000/v1\n  api_key: ${K}\n"},
		{"model on localhost", "model:\n  base_url: http://LocalHost:8000/v1\n  api_key: ${K}\n"},
		{"model on ::1", "model:\n  base_url: 'http://[::1]:8000/v1'\n  api_key: ${K}\n"},
		{"fallback opted in", "model:\n  base_url: https://a.example/v1\n  fallbacks:\n    - {base_url: 'http://10.0.0.6/v1', api_key: '${K}', allow_plain_http: true}\n"},
		{"fallback without a key", "model:\n  base_url: https://a.example/v1\n  fallbacks:\n    - {base_url: 'http://10.0.0.6/v1'}\n"},
		{"upstream opted in", "upstreams:\n  - name: a\n    url: http://10.0.0.7:9000/mcp\n    headers: {Authorization: \"Bearer ${K}\"}\n    allow_plain_http: true\n"},
		{"upstream without headers", "upstreams:\n  - name: a\n    url: http://10.0.0.7:9000/mcp\n"},
		{"agent opted in", "agents:\n  - {name: ex, url: 'http://10.0.0.8:9002/a2a?key=" + key + "', allow_plain_http: true}\n"},
		{"agent without a key", "agents:\n  - {name: ex, url: 'http://10.0.0.8:9002/a2a?page=12345'}\n"},
		{"upstream with a version in its query", "upstreams:\n  - name: a\n    url: 'http://10.0.0.7:9000/mcp?api-version=2024-06-01'\n"},
		{"upstream on loopback", "upstreams:\n  - name: a\n    url: http://127.0.0.1:9000/mcp\n    headers: {Authorization: \"Bearer ${K}\"}\n"},
	}
	for _, tc := range taken {
		t.Run("taken/"+tc.name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.yaml), vars); err != nil {
				t.Fatalf("Parse: %v", err)
			}
		})
	}
}
