package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// priority35Config: one global bucket of 4 tokens that refills too slowly
// to matter, half of it kept for requests of priority above 0; bob may
// use it, alice may not.
const priority35Config = "rate_limit: {per_second: 0.001, burst: 4, reserved: 0.5, priorities: {bob: 1}}\n"

// priority35Calls are the calls of TestMetaPriority*, in order: each
// begins a request of its own (reach/request), with the _meta
// reach/priority given (nil: none), and what it must get.
var priority35Calls = []struct {
	who      string
	priority any
	want     string // "ok", "reserved" (refused: the reserve is kept), or an error code
}{
	{"alice", nil, "ok"},
	{"alice", nil, "ok"},
	{"alice", nil, "reserved"},
	{"alice", 5, "reserved"}, // never raised past her principal's
	{"bob", 0, "reserved"},   // lowered: bulk work
	{"bob", "0", "reserved"}, // as a string, as the header writes it
	{"bob", 1, "ok"},         // his own: the reserve
	{"bob", "urgent", "bad_priority"},
	{"bob", 1.5, "bad_priority"},
}

// TestMetaPriorityGoSDK (R8): over MCP, a tools/call's _meta
// reach/priority sets the priority of the request the call begins, as
// Reach-Priority does on the calls API, through the Go SDK's client: it
// lowers the principal's (bob's bulk work is refused once only the
// reserve is left), never raises it (alice's 5 is 0), and a value that
// is not a whole number is a protocol error, bad_priority.
func TestMetaPriorityGoSDK(t *testing.T) {
	_, url, _, keys := authGateway(t, priority35Config)
	sessions := map[string]*mcp.ClientSession{}
	for _, who := range []string{"alice", "bob"} {
		cs, err := mcpAs(t, url, keys[who])
		if err != nil {
			t.Fatal(err)
		}
		sessions[who] = cs
	}
	for i, c := range priority35Calls {
		meta := mcp.Meta{"reach/request": fmt.Sprintf("prio35-go-%d", i)}
		if c.priority != nil {
			meta["reach/priority"] = c.priority
		}
		res, err := sessions[c.who].CallTool(t.Context(), &mcp.CallToolParams{Name: "search_kb", Arguments: map[string]any{"query": "refund"}, Meta: meta})
		got := "ok"
		var je *jsonrpc.Error
		switch {
		case errors.As(err, &je):
			var data struct{ Code string }
			json.Unmarshal(je.Data, &data)
			got = data.Code
		case err != nil:
			t.Fatalf("call %d: %v", i+1, err)
		case res.IsError:
			got = "refused: " + res.Content[0].(*mcp.TextContent).Text
			if strings.Contains(got, "reserved for priority requests") {
				got = "reserved"
			}
		}
		if got != c.want {
			t.Errorf("call %d, %s with _meta reach/priority %#v: %s, want %s", i+1, c.who, c.priority, got, c.want)
		}
	}
}

// priority35Script calls search_kb through the TypeScript MCP SDK's
// client (its import path the first argument) at the URL with the API
// key, once per _meta of the JSON list given, and prints a line for each:
// ok, refused and the text, or error and the protocol error's data code.
const priority35Script = `
const [sdk, url, key, metas] = process.argv.slice(2);
const { Client } = await import(sdk + "/dist/esm/client/index.js");
const { StreamableHTTPClientTransport } = await import(sdk + "/dist/esm/client/streamableHttp.js");
const c = new Client({ name: "prio35", version: "1" });
await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: "Bearer " + key } } }));
for (const _meta of JSON.parse(metas)) {
  try {
    const r = await c.callTool({ name: "search_kb", arguments: { query: "refund" }, _meta });
    console.log(r.isError ? "refused " + JSON.stringify(r.content[0].text) : "ok");
  } catch (e) { console.log("error " + (e.data && e.data.code)); }
}
await c.close();
`

// TestMetaPriorityTSSDK is TestMetaPriorityGoSDK through the TypeScript
// MCP SDK's client, which passes the _meta it is given.
func TestMetaPriorityTSSDK(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@modelcontextprotocol/sdk")
	script := filepath.Join(t.TempDir(), "prio35.mjs")
	if err := os.WriteFile(script, []byte(priority35Script), 0o600); err != nil {
		t.Fatal(err)
	}
	_, url, _, keys := authGateway(t, priority35Config)
	// One run of the client per principal, in order: alice's calls come
	// first in the list.
	var lines []string
	for _, who := range []string{"alice", "bob"} {
		var metas []map[string]any
		for i, c := range priority35Calls {
			if c.who != who {
				continue
			}
			m := map[string]any{"reach/request": fmt.Sprintf("prio35-ts-%d", i)}
			if c.priority != nil {
				m["reach/priority"] = c.priority
			}
			metas = append(metas, m)
		}
		b, _ := json.Marshal(metas)
		out, err := exec.Command(node, script, filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk"), url+"/mcp", keys[who], string(b)).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", who, err, out)
		}
		lines = append(lines, strings.Split(strings.TrimSpace(string(out)), "\n")...)
	}
	if len(lines) != len(priority35Calls) {
		t.Fatalf("the client printed %q; want a line per call", lines)
	}
	for i, c := range priority35Calls {
		got := lines[i]
		switch {
		case strings.HasPrefix(got, "error "):
			got = strings.TrimPrefix(got, "error ")
		case strings.Contains(got, "reserved for priority requests"):
			got = "reserved"
		}
		if got != c.want {
			t.Errorf("call %d, %s with _meta reach/priority %#v: %s, want %s", i+1, c.who, c.priority, lines[i], c.want)
		}
	}
}

// TestServedPriorityLevels (R8): with principals of two levels above 0
// (rate_limit.priorities {bob: 1, dave: 2}), the reserve serves them in
// order: bob (1) takes his share of it and is refused the rest, kept for
// the higher level; dave (2) takes it.
func TestServedPriorityLevels(t *testing.T) {
	_, url, _, keys := authGateway(t, "rate_limit: {per_second: 0.001, burst: 4, reserved: 0.5, priorities: {bob: 1, dave: 2}}\n")
	for i, c := range []struct{ who, says string }{
		{"alice", ""},
		{"alice", ""},
		{"alice", "global (capacity reserved for priority requests)"},
		{"bob", ""},
		{"bob", "global (capacity reserved for higher-priority requests)"},
		{"dave", ""},
		{"dave", "Too many calls (global rate limit)."},
	} {
		status, out := do(t, "POST", url+"/v1/calls", `{"tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"refund"}}]}`,
			map[string]string{"Authorization": "Bearer " + keys[c.who]})
		msg := fmt.Sprint(path(out, "results", 0, "error", "message"))
		if c.says == "" && msg != "<nil>" || c.says != "" && !strings.Contains(msg, c.says) {
			t.Errorf("call %d, %s: %d %q, want %q", i+1, c.who, status, msg, c.says)
		}
	}
}
