package gateway

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestAuth34InspectorNoKey runs the MCP Inspector's CLI, with no key,
// against a gateway that takes API keys, as a user at a terminal would
// (MCP_AUTO_OPEN_ENABLED stands for the TTY): after reach's 401 it looks
// for OAuth, finds none, and shows reach's own words (send an API key),
// not a login reach does not offer. (Without a TTY the Inspector stops at
// the 401 with its own "Interactive OAuth requires a TTY", before it asks
// reach anything more.)
func TestAuth34InspectorNoKey(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	cache := npmCache(t)
	node, bin := inspectorCLI(t, cache)
	t.Setenv("MCP_AUTO_OPEN_ENABLED", "true")
	t.Setenv("MCP_INSPECTOR_SECRET_STORE", "memory")
	base := serveNPM(t, "auth: {keys: true}\n")
	r := runInspector(t, node, bin, t.TempDir(), base+"/mcp", "--method", "tools/list")
	if r.Code == 0 {
		t.Fatalf("tools/list without a key succeeded\n%s", r.Out)
	}
	// Before, the discovery paths answered 401 too: the Inspector showed
	// "This endpoint needs credentials" as a registration rejected, status
	// 401, which it takes for a login to retry.
	msg, _ := r.Error["message"].(string)
	t.Logf("the Inspector said: %s", msg)
	if !strings.Contains(msg, "offers no OAuth login. Send an API key (Authorization: Bearer rk_") || r.Error["status"] == float64(401) {
		t.Errorf("the Inspector should show reach's words (no OAuth login, send an API key):\n%s", r.Out)
	}
}

// TestAuth34RefusalBeneath: the desk's escalate calls itself beneath
// itself through reach, which refuses that nested call as a re-entry; the
// desk passes the refusal back as its error. The caller reads the outer
// call's failure with the inner refusal's own next step (return to the
// running call), not the generic advice to check the arguments, which
// were right.
func TestAuth34RefusalBeneath(t *testing.T) {
	s, d := newFW34Shop(t, "")
	status, out := do(t, "POST", s.url+"/v1/calls", `{"request_id":"esc","tool_calls":[{"call_id":"a","tool":"up__escalate","arguments":{"ticket":"T1","level":0}}]}`, nil)
	res := path(out, "results", 0)
	msg, _ := path(res, "error", "message").(string)
	sugg, _ := path(res, "error", "suggestion").(string)
	if status != 200 || !strings.Contains(msg, "refused reentrancy") {
		t.Fatalf("status %d, result %v; want the desk's failure carrying reach's refusal of its nested call", status, res)
	}
	t.Logf("the caller read: %s / %s", msg, sugg)
	if strings.Contains(sugg, "Check the arguments") || !strings.Contains(sugg, "up__escalate") ||
		!strings.Contains(sugg, "return to the running up__escalate call") {
		t.Errorf("suggestion %q; want the nested refusal's own next step, not the arguments' check", sugg)
	}
	if got := strings.Join(d.entries(), ", "); got != "escalate T1 0" {
		t.Errorf("the desk ran %s; want the outer escalation only", got)
	}
	// Over MCP, the model reads the message, then the suggestion on a line
	// of its own.
	res2, text := callText(t, connectMCP(t, s.g, nil), "up__escalate", map[string]any{"ticket": "T2", "level": 0}, nil)
	last := text[strings.LastIndexByte(text, '\n')+1:]
	if !res2.IsError || !strings.HasPrefix(last, "It failed on reach's refusal (reentrancy) of the call of up__escalate it made beneath this one: ") {
		t.Errorf("over MCP the model read %q; want its last line the nested refusal's next step", text)
	}
}

// TestAuth34DeadlockBeneath: two requests each move one account to the
// other with the desk's transfer, which writes the other account through
// reach from inside its own write; reach refuses one nested write as a
// deadlock. That request's caller reads its transfer's failure with the
// deadlock's own next step (finish or undo what the request holds).
func TestAuth34DeadlockBeneath(t *testing.T) {
	s, _ := newFW34Shop(t, "tools:\n  up__transfer: {access: write, reentrancy: reentrant, writes: [\"acct:{from}\"]}\n")
	results := make([]any, 2)
	var wg sync.WaitGroup
	for i, ft := range [][2]string{{"x", "y"}, {"y", "x"}} {
		wg.Go(func() {
			_, out := do(t, "POST", s.url+"/v1/calls", fmt.Sprintf(`{"request_id":"move-%s","tool_calls":[{"call_id":"a","tool":"up__transfer","arguments":{"from":%q,"to":%q}}]}`,
				ft[0], ft[0], ft[1]), nil)
			results[i] = path(out, "results", 0)
		})
	}
	wg.Wait()
	refused := 0
	for _, res := range results {
		msg, _ := path(res, "error", "message").(string)
		if !strings.Contains(msg, "would deadlock") {
			continue
		}
		refused++
		sugg, _ := path(res, "error", "suggestion").(string)
		t.Logf("the caller read: %s / %s", msg, sugg)
		if strings.Contains(sugg, "Check the arguments") || !strings.Contains(sugg, "(deadlock) of the call of up__transfer") ||
			!strings.Contains(sugg, "Finish or undo what this request holds") {
			t.Errorf("suggestion %q; want the deadlock refusal's own next step", sugg)
		}
	}
	if refused != 1 {
		t.Fatalf("results %v; want one transfer failed on a deadlock refused beneath it", results)
	}
}

// auth34SDKScript connects the TypeScript MCP SDK's client (its import
// path is the first argument) to the URL, with an OAuth provider (as
// clients that offer a login pass) when asked, and prints what failed.
const auth34SDKScript = `
const sdk = process.argv[2];
const { Client } = await import(sdk + "/dist/esm/client/index.js");
const { StreamableHTTPClientTransport } = await import(sdk + "/dist/esm/client/streamableHttp.js");
const provider = {
  get redirectUrl() { return "http://127.0.0.1:9/cb"; },
  get clientMetadata() { return { client_name: "t", redirect_uris: ["http://127.0.0.1:9/cb"] }; },
  clientInformation() {}, saveClientInformation() {}, tokens() {}, saveTokens() {},
  redirectToAuthorization(u) { console.log("REDIRECTED " + u); },
  saveCodeVerifier() {}, codeVerifier() { return ""; },
};
const c = new Client({ name: "t", version: "1" });
try {
  await c.connect(new StreamableHTTPClientTransport(new URL(process.argv[3]), process.argv[4] === "provider" ? { authProvider: provider } : {}));
  console.log("CONNECTED");
} catch (e) { console.log("ERROR " + e.message); }
`

// TestAuth34SDKNoKey connects the TypeScript MCP SDK's client, with no key,
// to a gateway that takes API keys: without an OAuth provider it shows
// reach's 401; with one it looks for OAuth, finds none, and shows reach's
// words, not an OAuth error it cannot parse.
func TestAuth34SDKNoKey(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@modelcontextprotocol/sdk")
	script := filepath.Join(t.TempDir(), "sdk.mjs")
	if err := os.WriteFile(script, []byte(auth34SDKScript), 0o600); err != nil {
		t.Fatal(err)
	}
	base := serveNPM(t, "auth: {keys: true}\n")
	for _, mode := range []string{"plain", "provider"} {
		out, err := exec.Command(node, script, filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk"), base+"/mcp", mode).CombinedOutput()
		got := strings.TrimSpace(string(out))
		t.Logf("%s: %s (%v)", mode, got, err)
		want := "ERROR Streamable HTTP error: Error POSTing to endpoint: " // then reach's 401 body
		if mode == "provider" {
			want = "ERROR This gateway offers no OAuth login. Send an API key (Authorization: Bearer rk_"
		}
		if !strings.HasPrefix(got, want) || !strings.Contains(got, "Send an API key") {
			t.Errorf("%s: the client said %q; want %q..., reach's words", mode, got, want)
		}
	}
}
