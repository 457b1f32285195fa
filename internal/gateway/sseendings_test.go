package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// sseEndingsUpstream is an MCP upstream over Streamable HTTP whose tool
// "echo" answers on an SSE stream with the line ending eol: a progress
// notification first, then the result, its data on two lines.
func sseEndingsUpstream(eol string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(b, &m)
		answer := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
		}
		switch m.Method {
		case "initialize":
			answer(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"endings","version":"1"}}`)
		case "tools/list":
			answer(`{"tools":[{"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`)
		case "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			lines := []string{
				": comment", "id: e1", "retry: 100",
				`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}`, "",
				"id: e2", `data: {"jsonrpc":"2.0","id":` + string(m.ID) + `,`,
				`data: "result":{"content":[{"type":"text","text":"answered"}]}}`, "",
			}
			io.WriteString(w, strings.Join(lines, eol)+eol)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}
}

// TestUpstreamSSELineEndings: a tool call answered by an HTTP upstream on
// an SSE stream whose lines end with LF, CR LF or a lone CR (the three
// endings the SSE format allows) reaches the agent as the upstream's
// result, not as an error.
func TestUpstreamSSELineEndings(t *testing.T) {
	for _, eol := range []string{"\n", "\r\n", "\r"} {
		up := httptest.NewServer(sseEndingsUpstream(eol))
		cfg, err := config.Parse([]byte("upstreams:\n  - name: u\n    url: "+up.URL+"\n"), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		cs := connectMCP(t, newTestGateway(t, cfg), nil)
		res, text := callText(t, cs, "u__echo", map[string]any{}, nil)
		if res.IsError || text != "answered" {
			t.Errorf("line endings %q: isError %v, text %q; want the upstream's answer", eol, res.IsError, text)
		}
		up.Close()
	}
}
