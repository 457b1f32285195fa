package modelproxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestHostedMCPRefused: a turn that offers the model a hosted MCP tool
// (type "mcp": the endpoint calls the server itself, OpenAI Agents'
// hostedMcpTool with no approval by default) is refused with a 400 that
// names the tool's server and says what to do instead, not to be
// retried, and the model is not asked: its calls would pass none of
// reach's guards. Before, the turn went through and the endpoint's tool
// calls were in no graph, budget or audit log. A turn whose tools are
// functions (or a hosted tool of another type) is sent as before.
func TestHostedMCPRefused(t *testing.T) {
	fake := &fakeResponses{text: "ok", args: "{}", summary: "s", cut: 1}
	srv, _, _ := newResponsesProxy(t, fake, nil)
	hosted := `{"type":"mcp","server_label":"shop","server_url":"https://shop.example/mcp","authorization":"tok-` + respSecret + `","require_approval":"never"}`
	for _, c := range []struct{ path, body string }{
		{"/v1/responses", `{"model":"m","input":"go","tools":[` + hosted + `]}`},
		{"/v1/responses", `{"model":"m","input":"go","stream":true,"tools":[{"type":"function","name":"f","parameters":{}},` + hosted + `]}`},
		{"/v1/responses", `{"model":"m","input":"go","tools":[7,{"Type":"MCP","server_label":"shop"}]}`},
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"go"}],"tools":[` + hosted + `]}`},
	} {
		req, _ := http.NewRequest("POST", srv.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Error struct{ Type, Code, Param, Message string }
		}
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || out.Error.Code != "hosted_mcp_unsupported" || out.Error.Param != "tools" {
			t.Errorf("%s %s: %d %+v, want 400 hosted_mcp_unsupported", c.path, c.body, resp.StatusCode, out.Error)
		}
		if resp.Header.Get("X-Should-Retry") != "false" {
			t.Errorf("%s: x-should-retry %q, want false", c.body, resp.Header.Get("X-Should-Retry"))
		}
		for _, want := range []string{`server_label "shop"`, "MCPServerStreamableHttp", "/mcp"} {
			if !strings.Contains(out.Error.Message, want) {
				t.Errorf("%s: the message %q does not say %q", c.body, out.Error.Message, want)
			}
		}
		if strings.Contains(out.Error.Message, respSecret) || strings.Contains(out.Error.Message, "shop.example") {
			t.Errorf("the message repeats the tool's server or its authorization: %q", out.Error.Message)
		}
	}
	if fake.n != 0 {
		t.Errorf("the model was asked %d times, want none", fake.n)
	}
	for _, body := range []string{
		`{"model":"m","input":"go","tools":[{"type":"function","name":"mcp","parameters":{}}]}`,
		`{"model":"m","input":"go","tools":[{"type":"web_search"}]}`,
	} {
		if resp, b := postResponses(t, srv.URL, body, nil); resp.StatusCode != 200 {
			t.Errorf("%s: %d %s, want it sent", body, resp.StatusCode, b)
		}
	}
	if fake.n != 2 {
		t.Errorf("the model was asked %d times, want 2", fake.n)
	}
}
