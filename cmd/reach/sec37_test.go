package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// TestSec37ServeCardHost: `reach serve` answers an agent's card at its own
// address (its URL that address, Cache-Control no-store) and refuses it
// at another port of loopback (421 host_not_allowed, saying what to
// configure); with a2a.public_url, the card names that URL at any Host.
func TestSec37ServeCardHost(t *testing.T) {
	mux := http.NewServeMux()
	up := httptest.NewServer(mux)
	defer up.Close()
	mux.Handle("GET "+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{Name: "executor", Description: "d", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(up.URL+"/", a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true}, DefaultInputModes: []string{"text"}, DefaultOutputModes: []string{"text"}}))
	card := func(base, host string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/a2a/executor/.well-known/agent-card.json", nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Cache-Control"), string(b)
	}
	cfg := writeConfig(t, "agents:\n  - {name: executor, url: "+up.URL+"}\n")
	base, _, _ := startServe(t, "--config", cfg, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	if code, cc, body := card(base, ""); code != http.StatusOK || cc != "no-store" || !strings.Contains(body, base+"/a2a/executor") {
		t.Errorf("the card at reach's own address: %d %q %s", code, cc, body)
	}
	if code, _, body := card(base, "localhost:1"); code != http.StatusMisdirectedRequest || !strings.Contains(body, "host_not_allowed") || !strings.Contains(body, "a2a.public_url") {
		t.Errorf("the card at Host localhost:1: %d %s; want 421 host_not_allowed naming a2a.public_url", code, body)
	}
	cfg = writeConfig(t, "agents:\n  - {name: executor, url: "+up.URL+"}\na2a: {public_url: 'https://reach.example.com'}\n")
	base, _, _ = startServe(t, "--config", cfg, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	if code, _, body := card(base, "localhost:1"); code != http.StatusOK || !strings.Contains(body, "https://reach.example.com/a2a/executor") || strings.Contains(body, "localhost:1") {
		t.Errorf("the card with a2a.public_url at Host localhost:1: %d %s", code, body)
	}
}
