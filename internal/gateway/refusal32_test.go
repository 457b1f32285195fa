package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/link"
)

// TestLinkRefusalsByWhoReads: a call reach cannot place in a request (a
// link.Error) is answered by who reads it, through each front's real HTTP
// stack, as link.Error.Model says, not by its code's name. One the model
// reads (a budget its principal may not name, a request not its to work
// in) is over MCP a tool result with isError, _meta reach/status refused
// and reach/error {code, type}; over the model proxy an OpenAI-style
// error of a status no SDK retries (400 or 403, x-should-retry: false);
// over A2A a rejected task whose status message carries reach/refusal.
// One that is the client's (a malformed or unknown parent, scene or
// request id) is a protocol error: JSON-RPC's over MCP and A2A, with the
// code in its data, and the model proxy's own status. Each one's text
// says what happened and what to do next. Before, MCP answered by two
// codes' names: not_your_request and request_id_unavailable were protocol
// errors there, and A2A made a rejected task of every one, a malformed
// header's too.
func TestLinkRefusalsByWhoReads(t *testing.T) {
	_, url, keys, asked := budgetTenantGateway(t)
	// alice's request, which bob (her tenant's) and eve (another's) name.
	if st, out := do(t, "POST", url+"/v1/calls", `{"request_id":"alices","tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"x"}}]}`,
		map[string]string{"Authorization": "Bearer " + keys["alice"]}); st != 200 {
		t.Fatalf("alice's call: %d %v", st, out)
	}
	kinds := map[string]link.Kind{}
	for _, k := range link.Kinds() {
		kinds[k.Code] = k
	}
	for _, c := range []struct {
		code, who string
		header    map[string]string
	}{
		{"bad_parent", "alice", map[string]string{"Reach-Parent": "zz"}},
		{"bad_scene", "alice", map[string]string{"Reach-Scene": "no such scene!"}},
		{"bad_request_id", "alice", map[string]string{"Reach-Request": strings.Repeat("r", link.MaxRequestID+1)}},
		{"unknown_parent", "alice", map[string]string{"Reach-Parent": "00000000000000ff"}},
		{"bad_request_spec", "alice", map[string]string{"Reach-Budget": "nosuchbudget"}},
		{"budget_not_permitted", "eve", map[string]string{"Reach-Budget": "team"}},
		{"not_your_request", "bob", map[string]string{"Reach-Request": "alices"}},
		{"request_id_unavailable", "eve", map[string]string{"Reach-Request": "alices"}},
	} {
		k, ok := kinds[c.code]
		if !ok {
			t.Fatalf("%s is no declared link.Kind", c.code)
		}
		session := ""
		post := func(path, body string) (int, http.Header, []byte) {
			t.Helper()
			req, _ := http.NewRequest("POST", url+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+keys[c.who])
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if session != "" {
				if session != "-" {
					req.Header.Set("Mcp-Session-Id", session)
				}
				for h, v := range c.header {
					req.Header.Set(h, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, resp.Header, out
		}
		// MCP, in a session opened without the headers.
		_, h, out := post("/mcp", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`)
		if session = h.Get("Mcp-Session-Id"); session == "" {
			t.Fatalf("initialize: %s, no session", out)
		}
		post("/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		_, _, out = post("/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_kb","arguments":{"query":"x"}}}`)
		var rpc struct {
			Result *struct {
				IsError bool                       `json:"isError"`
				Content []struct{ Text string }    `json:"content"`
				Meta    map[string]json.RawMessage `json:"_meta"`
			} `json:"result"`
			Error *struct {
				Message string
				Data    struct{ Code string }
			} `json:"error"`
		}
		if err := json.Unmarshal(jsonOf(out), &rpc); err != nil {
			t.Fatalf("%s over MCP: %s: %v", c.code, out, err)
		}
		if k.Model {
			var e struct{ Code, Type string }
			if rpc.Result == nil || !rpc.Result.IsError || len(rpc.Result.Content) != 1 || json.Unmarshal(rpc.Result.Meta["reach/error"], &e) != nil ||
				e.Code != c.code || e.Type != k.Type || string(rpc.Result.Meta["reach/status"]) != `"refused"` {
				t.Errorf("%s over MCP: %s; want a tool result with isError, reach/status refused, reach/error {%s, %s}", c.code, out, c.code, k.Type)
			} else {
				checkNextStep(t, c.code+" over MCP", rpc.Result.Content[0].Text)
			}
		} else if rpc.Error == nil || rpc.Error.Data.Code != c.code {
			t.Errorf("%s over MCP: %s; want a JSON-RPC error with data.code %s", c.code, out, c.code)
		} else {
			checkNextStep(t, c.code+" over MCP", rpc.Error.Message)
		}

		// The model proxy.
		session = "-" // the headers, no session
		before := *asked
		status, h, out := post("/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`)
		var oe struct {
			Error struct{ Code, Message, Type string } `json:"error"`
		}
		json.Unmarshal(out, &oe)
		if *asked != before || oe.Error.Code != c.code {
			t.Errorf("%s over the model proxy: %d %s (model asked %d times); want its error, the model not asked", c.code, status, out, *asked-before)
		}
		checkNextStep(t, c.code+" over the model proxy", oe.Error.Message)
		if retried(status, h) != (k.Status == http.StatusTooManyRequests || k.Status >= 500) {
			t.Errorf("%s over the model proxy: %d, x-should-retry %q: an SDK retries it %v", c.code, status, h.Get("X-Should-Retry"), retried(status, h))
		}
		if k.Model && status != http.StatusForbidden && status != http.StatusBadRequest {
			t.Errorf("%s over the model proxy: %d; want 400 or 403, the model's to act on", c.code, status)
		}

		// A2A.
		_, _, out = post("/a2a/executor", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`)
		var ar struct {
			Result *struct {
				Task *struct {
					Status struct {
						State   string
						Message struct {
							Parts    []struct{ Text string }
							Metadata map[string]map[string]any
						}
					}
				}
			}
			Error *struct {
				Message string
				Data    any
			}
		}
		if err := json.Unmarshal(out, &ar); err != nil {
			t.Fatalf("%s over A2A: %s: %v", c.code, out, err)
		}
		if k.Model {
			if ar.Result == nil || ar.Result.Task == nil || ar.Result.Task.Status.State != "TASK_STATE_REJECTED" ||
				ar.Result.Task.Status.Message.Metadata["reach/refusal"]["code"] != c.code || len(ar.Result.Task.Status.Message.Parts) != 1 {
				t.Errorf("%s over A2A: %s; want a rejected task with reach/refusal code %s", c.code, out, c.code)
			} else {
				checkNextStep(t, c.code+" over A2A", ar.Result.Task.Status.Message.Parts[0].Text)
			}
		} else if ar.Error == nil || !strings.Contains(string(out), `"`+c.code+`"`) || ar.Result != nil {
			t.Errorf("%s over A2A: %s; want a JSON-RPC error naming %s, no task", c.code, out, c.code)
		} else {
			checkNextStep(t, c.code+" over A2A", ar.Error.Message)
		}
	}
}

// jsonOf is the JSON of an answer that may come as an SSE event.
func jsonOf(b []byte) []byte {
	s := string(b)
	if i := strings.Index(s, "data: "); i >= 0 {
		s = s[i+len("data: "):]
		if j := strings.IndexByte(s, '\n'); j >= 0 {
			s = s[:j]
		}
	}
	return []byte(s)
}

// retried says whether an SDK retries an answer: the openai SDKs obey
// x-should-retry when it is said, else retry 408, 409, 429 and 5xx; the AI
// SDK retries those whatever the headers say.
func retried(status int, h http.Header) bool {
	return status == 408 || status == 409 || status == 429 || status >= 500 || h.Get("X-Should-Retry") == "true"
}

// checkNextStep fails a refusal's text that says nothing past its code:
// empty, the code alone, or no sentence of what to do next.
func checkNextStep(t *testing.T, what, text string) {
	t.Helper()
	s := strings.TrimSpace(text)
	if s == "" || !strings.Contains(s, " ") || strings.Count(s, ".") < 2 && !strings.Contains(s, ";") {
		t.Errorf("%s: text %q says not what happened and what to do next", what, text)
	}
}
