package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/config"
)

// TestAgentCardSecretsStayHidden: an agent's URL carries its key in the
// query, and what the agent serves as its card may carry it too (an agent
// that writes the address it was asked at into its card's documentation
// link or description), or not be a card at all. Neither the card reach
// serves, GET /v1/agents, nor a failed task's message (which the model
// reads) may show the key.
func TestAgentCardSecretsStayHidden(t *testing.T) {
	const key = "AIzaCardKey7777777"
	card := func(self string) string {
		return `{"name":"echo ` + key + `","description":"served at ` + self + `","version":"1","url":"` + self + `",` +
			`"documentationUrl":"` + self + `/docs","protocolVersion":"0.3.0","preferredTransport":"JSONRPC",` +
			`"capabilities":{"streaming":true},"defaultInputModes":["text"],"defaultOutputModes":["text"],` +
			`"skills":[{"id":"s","name":"skill ` + key + `","description":"d","tags":["t"],"examples":["ask ` + self + `"]}]}`
	}
	for _, tc := range []struct {
		name string
		body func(self string) string
	}{
		{"not a card", func(self string) string { return "<html>sign in at " + self + "</html>" }},
		{"a card with the key", card},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var self string
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if strings.HasSuffix(r.URL.Path, "agent-card.json") {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, tc.body(self))
					return
				}
				w.WriteHeader(http.StatusNotFound)
			}))
			defer up.Close()
			self = up.URL + "/a2a?key=" + key
			cfg, err := config.Parse([]byte("agents:\n  - {name: ex, url: '"+self+"'}\n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			g := newTestGateway(t, cfg)
			base := serveTest(t, g).URL
			code, out := do(t, "GET", base+"/v1/agents", "", nil)
			if b, _ := json.Marshal(out); code != 200 || strings.Contains(string(b), key) {
				t.Errorf("GET /v1/agents: %d %s", code, b)
			}
			resp, err := http.Get(base + "/a2a/ex/.well-known/agent-card.json")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), key) {
				t.Errorf("the card reach serves shows the key: %s", b)
			}
			if tc.name == "not a card" {
				tk := a2aSend(t, base, "ex", "hi")
				if txt := textOf(tk); tk.Status.State != a2a.TaskStateFailed || strings.Contains(txt, key) {
					t.Errorf("the task is %s, its message %q: want failed, without the key", tk.Status.State, txt)
				}
			}
		})
	}
}
