package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/mcpwire"
)

// cannedUpstream is the bench upstream with tools/call answered by hand,
// the way the go-sdk answers it (one SSE event), so that a benchmark of
// the gateway measures the gateway and not the SDK's JSON decoding.
func cannedUpstream(b *testing.B) string {
	sdk := benchUpstream(b)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg mcpwire.Message
		if r.Method != http.MethodPost || r.Header.Get(mcpwire.HeaderSession) == "" || json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
			req, _ := http.NewRequestWithContext(r.Context(), r.Method, sdk.URL, bytes.NewReader(body))
			req.Header = r.Header.Clone()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			for k, v := range resp.Header {
				w.Header()[k] = v
			}
			w.WriteHeader(resp.StatusCode)
			buf := make([]byte, 4096)
			for {
				n, err := resp.Body.Read(buf)
				w.Write(buf[:n])
				w.(http.Flusher).Flush()
				if err != nil {
					return
				}
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":%q}]}}\n\n", msg.ID, "echo")
		w.(http.Flusher).Flush()
	})
	return serveLabeled(b, "upstream", h).URL
}

// BenchmarkGatewayLeanPath measures one tools/call on the lean path with a
// client and an upstream that do next to nothing (raw HTTP posts, a canned
// SSE answer): "direct" is the client and the upstream alone, "reach" puts
// the gateway between them; the difference in time, bytes and allocations
// per call is the gateway's (its HTTP server, the guards, its upstream
// exchange). "relay" puts a raw TCP relay there instead (tcpRelay): what
// any second hop costs before it reads a byte.
//
//	go test -run '^$' -bench GatewayLeanPath -benchmem ./internal/gateway/
func BenchmarkGatewayLeanPath(b *testing.B) {
	up := cannedUpstream(b)
	cfg := &config.Config{
		Upstreams: []config.Upstream{{Name: "up", URL: up}},
		Budgets:   map[string]config.Budget{"default": {}},
	}
	g, err := New(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	gw := serveLabeled(b, "gateway", g.Handler())
	relay := benchRelay(b, up)
	for _, tc := range []struct{ name, url, tool string }{{"direct", up, "echo"}, {"reach", gw.URL + "/mcp", "up__echo"}, {"relay", relay, "echo"}} {
		b.Run(tc.name, func(b *testing.B) {
			cs := benchClient(b, tc.url, mcpwire.SessionProtocol) // a session, on both
			i := 0
			post := func() {
				i++
				body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"` + tc.tool + `","arguments":{"text":"call ` + strconv.Itoa(i) + `"}}}`
				req, _ := http.NewRequest(http.MethodPost, tc.url, bytes.NewReader([]byte(body)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set(mcpwire.HeaderSession, cs.ID())
				req.Header.Set(mcpwire.HeaderProtocol, cs.InitializeResult().ProtocolVersion)
				resp, err := benchHTTPClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"result"`)) || bytes.Contains(out, []byte(`"isError":true`)) {
					b.Fatalf("%s: %d %s", tc.name, resp.StatusCode, out)
				}
			}
			for range 50 {
				post()
			}
			b.ReportAllocs()
			for b.Loop() {
				post()
			}
		})
	}
}
