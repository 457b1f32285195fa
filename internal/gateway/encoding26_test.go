package gateway

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAttack26EncodedBodyRefused: a compressed body (Content-Encoding:
// gzip, deflate, br, or any coding but identity) is refused with 415
// unsupported_encoding on every route, the fast MCP lane too, saying to
// send it uncompressed; nothing runs. Before, the calls API answered
// "invalid character '\x1f'", MCP echoed the compressed bytes back in a
// plain-text 400, and a request with a coding and a plain JSON body ran on
// one lane and not on the other.
func TestAttack26EncodedBodyRefused(t *testing.T) {
	g := newTestGateway(t, nil)
	srv := serveTest(t, g)
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.Bytes()
	}
	call := `{"request_id":"enc-%s","tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"refund"}}]}`
	mcpCall := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_kb","arguments":{"query":"refund"},"_meta":{"reach/request":"enc-%s"}}}`
	post := func(path, coding string, body []byte) (int, http.Header, []byte) {
		req, _ := http.NewRequest("POST", srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if coding != "" {
			req.Header.Set("Content-Encoding", coding)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, out
	}
	for i, tc := range []struct {
		path, coding, tmpl string
		compress           bool
	}{
		{"/v1/calls", "gzip", call, true},
		{"/v1/calls", "gzip", call, false}, // says gzip, sends plain JSON
		{"/v1/calls", "br", call, false},
		{"/v1/calls", "identity, gzip", call, false},
		{"/mcp", "gzip", mcpCall, true},
		{"/mcp", "GZIP", mcpCall, false}, // plain JSON: the fast lane would serve it
		{"/mcp", "deflate", mcpCall, false},
		{"/v1/chat/completions", "gzip", `{"model":"m","messages":[{"role":"user","content":"%s"}]}`, true},
	} {
		id := string(rune('a' + i))
		body := []byte(strings.Replace(tc.tmpl, "%s", id, 1))
		if tc.compress {
			body = gz(string(body))
		}
		status, h, out := post(tc.path, tc.coding, body)
		var e struct {
			Error struct{ Code, Message, Suggestion string } `json:"error"`
		}
		json.Unmarshal(out, &e)
		if status != http.StatusUnsupportedMediaType || e.Error.Code != "unsupported_encoding" ||
			!strings.Contains(e.Error.Suggestion, "uncompressed") || h.Get("Accept-Encoding") != "identity" {
			t.Errorf("POST %s, Content-Encoding %q (compressed %v): %d %q, want 415 unsupported_encoding", tc.path, tc.coding, tc.compress, status, out)
		}
		if _, ran := g.rt.Lookup("enc-" + id); ran {
			t.Errorf("POST %s, Content-Encoding %q: the call ran", tc.path, tc.coding)
		}
	}
	// identity is no coding: served.
	if status, _, out := post("/v1/calls", "identity", []byte(strings.Replace(call, "%s", "id", 1))); status != http.StatusOK {
		t.Errorf("Content-Encoding identity: %d %s, want 200", status, out)
	}
}
