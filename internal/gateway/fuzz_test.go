package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/mcpwire"
)

// FuzzHTTPBodies sends arbitrary bodies to the MCP endpoint (as JSON-RPC,
// with sessions and as a sessionless tools/call, which the lean path
// reads) and to the calls API: every answer is a clear client error or a
// result, never a crash (a recovered panic would be a 500) or a hang.
func FuzzHTTPBodies(f *testing.F) {
	seeds := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_order","arguments":{"order_id":"1001"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_kb","arguments":{"query":"x"},"_meta":{"reach/parent":"zz","reach/budget":{"turns":-1}}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":null}`,
		`{"jsonrpc":"1.0","id":{},"method":7}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_order","arguments":{"order_id":"1001"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"f","version":"1"}}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":7}}}`,
		`{"tool_calls":[{"call_id":"a","tool":"get_order","arguments":{"order_id":"1001"}}]}`,
		`{"request_id":"r","tool_calls":[{"call_id":"a","tool":"refund_order","arguments":{"order_id":"1001","amount":1e308,"reason":"xyz"}},{"call_id":"b","tool":"get_order","arguments":{"$ref":"a.order_id"}}]}`,
		`{"tool_calls":[{"call_id":"a","tool":"format_answer","arguments":{"text":"\u0000\ud800"}}]}`,
		`{`, `[]`, `null`, "\xff\xfe", strings.Repeat("[", 10000),
	}
	for _, s := range seeds {
		for mode := range uint8(3) {
			f.Add([]byte(s), mode)
		}
	}
	g := newTestGateway(f, &config.Config{MaxBodyBytes: 64 << 10})
	h := g.Handler()
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		target, toMCP := "/v1/calls", mode%3 != 0
		if toMCP {
			target = "/mcp"
		}
		req := httptest.NewRequest("POST", target, bytes.NewReader(body))
		req.Host = "127.0.0.1"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		if mode%3 == 2 { // the sessionless protocol
			req.Header.Set("MCP-Protocol-Version", mcpwire.StatelessProtocol)
			req.Header.Set("Mcp-Method", "tools/call")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("POST %s %q: status %d: %s", target, body, w.Code, w.Body.String())
		}
		if !toMCP {
			var out map[string]json.RawMessage
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
				t.Fatalf("POST /v1/calls %q: answer is not JSON: %q", body, w.Body.String())
			}
			if w.Code != http.StatusOK && out["error"] == nil {
				t.Fatalf("POST /v1/calls %q: %d without an error object: %s", body, w.Code, w.Body.String())
			}
		}
	})
}

// FuzzModelProxy sends arbitrary chat completion bodies through the model
// proxy to a model endpoint that answers arbitrary bytes, as JSON or as an
// SSE stream: the proxy never fails as itself (a 500; a model's bad answer
// is the model's, a 502). Each call is a request of its own, so that every
// one reaches the model (a shared one would soon be over budget).
func FuzzModelProxy(f *testing.F) {
	for _, s := range [][2]string{
		{`{"messages":[{"role":"user","content":"hi"}]}`, `{"choices":[{"index":0,"message":{"role":"assistant","content":"yes","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`},
		{`{"stream":true,"stream_options":null,"messages":[]}`, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":-5,\"completion_tokens\":1e300}}\n\ndata: [DONE]\n\n"},
		{`null`, `null`}, {`[]`, `[]`}, {`{"model":7,"stream":"yes"}`, `{"usage":null}`},
		{`{"stream":true,"stream_options":{"include_usage":"x"}}`, "data:\ndata: [DONE]\n"},
		{`{"stream":true}`, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"sk-fuzz\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"-key-123456\"},\"finish_reason\":\"stop\"}]}\n\n"},
	} {
		f.Add([]byte(s[0]), []byte(s[1]), false)
		f.Add([]byte(s[0]), []byte(s[1]), true)
	}
	fuzzModelRoute(f, "/v1/chat/completions")
}

// FuzzModelProxyResponses is FuzzModelProxy for the Responses API
// (POST /v1/responses), which agent frameworks call by default: whatever a
// client sends and whatever the model's endpoint answers, whole or as a
// stream, the gateway answers without a 500 and never with the model's key
// or a secret the endpoint spelled.
func FuzzModelProxyResponses(f *testing.F) {
	for _, s := range [][2]string{
		{`{"model":"m","input":"hi"}`, `{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"yes"}]},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}],"usage":{"input_tokens":3,"output_tokens":1}}`},
		{`{"input":[{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"ok"}],"previous_response_id":"resp_0"}`, `{"output":[],"usage":{"input_tokens":-5,"output_tokens":1e300}}`},
		{`{"stream":true,"input":"x"}`, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"delta\":\"sk-fuzz\"}\n\nevent: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"delta\":\"-key-123456\"}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":3,\"response\":{\"output\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":2}}}\n\n"},
		{`{"stream":true,"background":true}`, "data: [DONE]\n\n"},
		{`{"previous_response_id":"sk-fuzz-key-123456","input":"x"}`, `{}`}, {`{"conversation":{"id":"sk-fuzz-key-123456"}}`, `{}`},
		{`null`, `null`}, {`[]`, `{"output":"x"}`}, {`{"input":7,"max_output_tokens":-1,"tools":{}}`, `{"usage":null}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]), false)
		f.Add([]byte(s[0]), []byte(s[1]), true)
	}
	fuzzModelRoute(f, "/v1/responses")
}

// FuzzAPIRoutes sends any method, id, query and body to every route of the
// HTTP API and the UI that takes them: an answer is a result or a client
// error, never a 500 (a recovered panic) or a hang, and an error of the
// /v1 routes is the JSON error object that says what to do.
func FuzzAPIRoutes(f *testing.F) {
	f.Add(uint8(0), uint8(0), "r-1", "limit=5&request=r-1&tool=get_order", []byte(`{}`))
	f.Add(uint8(3), uint8(1), "x", "format=dot", []byte(`{"mode":"cancel","reason":"stop"}`))
	f.Add(uint8(6), uint8(1), "a1", "", []byte(`{"reason":"ok","actor":"me"}`))
	f.Add(uint8(9), uint8(0), "%zz", "state=%ff&limit=-1", []byte(`[`))
	f.Add(uint8(12), uint8(2), "../../etc", "limit=99999999999999999999", []byte("\x00"))
	g := newTestGateway(f, &config.Config{MaxBodyBytes: 64 << 10})
	h := g.Handler()
	routes := []string{
		"/v1/requests", "/v1/requests/{id}", "/v1/requests/{id}/graph", "/v1/requests/{id}/cancel",
		"/v1/requests/{id}/end", "/v1/approvals", "/v1/approvals/{id}/approve", "/v1/approvals/{id}/deny",
		"/v1/approvals/{id}", "/v1/deadletters", "/v1/deadletters/{id}/retry", "/v1/deadletters/{id}/dismiss",
		"/v1/audit", "/v1/audit/verify", "/v1/stats", "/v1/tools", "/v1/agents", "/ui/", "/ui/requests/{id}",
		"/ui/audit", "/metrics",
	}
	methods := []string{"GET", "POST", "DELETE", "PUT"}
	f.Fuzz(func(t *testing.T, route, method uint8, id, query string, body []byte) {
		if strings.ContainsAny(id, "/?#") || !validPathSegment(id) {
			return
		}
		path := strings.ReplaceAll(routes[int(route)%len(routes)], "{id}", id)
		target := path
		if query != "" {
			target += "?" + query
		}
		m := methods[int(method)%len(methods)]
		req, err := http.NewRequest(m, "http://127.0.0.1"+target, bytes.NewReader(body))
		if err != nil {
			return // not a request a client could send
		}
		req.RemoteAddr = "127.0.0.1:1234"
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 && w.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s %q: status %d: %s", m, target, body, w.Code, w.Body.String())
		}
		if w.Code >= 400 && strings.HasPrefix(path, "/v1/") {
			var out struct {
				Error *struct{ Message, Suggestion string } `json:"error"`
			}
			if json.Unmarshal(w.Body.Bytes(), &out) != nil || out.Error == nil || out.Error.Message == "" {
				t.Fatalf("%s %s: %d without a JSON error that says what happened: %q", m, target, w.Code, w.Body.String())
			}
		}
	})
}

// validPathSegment reports whether s can stand in a URL's path as it is.
func validPathSegment(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// fuzzModelRoute serves the fuzz inputs (a client's body, the model
// endpoint's answer, whether the endpoint streams) to route: never a 500
// (a model's bad answer is the model's, a 502), and never the model's key
// in what the client reads.
func fuzzModelRoute(f *testing.F, route string) {
	var answer atomic.Pointer[[]byte]
	var sse atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sse.Load() {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		w.Write(*answer.Load())
	}))
	f.Cleanup(up.Close)
	cfg, err := config.Parse([]byte("model: {base_url: '"+up.URL+"/v1', api_key: sk-fuzz-key-123456, name: fake}\n"), nil)
	if err != nil {
		f.Fatal(err)
	}
	h := newTestGateway(f, cfg).Handler()
	f.Fuzz(func(t *testing.T, body, ans []byte, stream bool) {
		answer.Store(&ans)
		sse.Store(stream)
		req := httptest.NewRequest("POST", route, bytes.NewReader(body))
		req.Host = "127.0.0.1"
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code == http.StatusInternalServerError {
			t.Fatalf("body %q, answer %q: 500: %s", body, ans, w.Body.String())
		}
		if strings.Contains(w.Body.String(), "sk-fuzz-key-123456") {
			t.Fatalf("body %q, answer %q: the model's key reached the client: %s", body, ans, w.Body.String())
		}
	})
}
