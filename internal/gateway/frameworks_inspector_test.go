package gateway

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/link"
)

// TestFrameworksInspectorCLI: the MCP Inspector's CLI
// (@modelcontextprotocol/inspector --cli, in its own folder of
// scripts/frameworks-deps.sh), on its defaults against reach's /mcp, each
// run a process and a session of its own. It lists the tools (a forbidden
// one is not listed), calls one, and prints reach's refusals as results
// with isError and reach's text, exiting 0: a policy's denial, and a loop
// of identical calls from three runs that name one request (its --header
// Reach-Request), whose third is refused.
func TestFrameworksInspectorCLI(t *testing.T) {
	dir, node := frameworksCache(t)
	cli := filepath.Join(dir, "inspector", "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	pol := filepath.Join(t.TempDir(), "p.cedar")
	if err := os.WriteFile(pol, []byte(`@id("all")
permit (principal, action, resource);

@id("no-secrets")
@reason("echoing secrets is not allowed here")
forbid (principal, action == Reach::Action::"call", resource == Reach::Tool::"up__echo")
when { context.arguments has text && context.arguments.text == "secret" };
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, srv := upstreamGateway(t, probeConfig+"tools:\n  up__slow: {access: forbidden}\npolicy: {path: "+pol+"}\n")
	home := t.TempDir() // where it would keep its catalog of servers
	// inspect runs the CLI and returns what it printed on stdout and its
	// exit status: 0, or 5 for a tool's result with isError (which it
	// prints, and names on stderr).
	inspect := func(args ...string) (map[string]any, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{cli, "--cli", srv.URL + "/mcp"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 5 && strings.Contains(string(ee.Stderr), "isError") {
			code = 5
		} else if err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("inspector %v printed %s", args, out)
		}
		return got, code
	}
	list, _ := inspect("--method", "tools/list")
	var names []string
	tools, _ := list["tools"].([]any)
	for _, x := range tools {
		if m, ok := x.(map[string]any); ok {
			names = append(names, m["name"].(string))
		}
	}
	if !strings.Contains(strings.Join(names, " "), "up__echo") || strings.Contains(strings.Join(names, " "), "up__slow") {
		t.Errorf("tools/list: %v, want up__echo and not the forbidden up__slow", names)
	}
	call := func(text string, more ...string) map[string]any {
		t.Helper()
		got, code := inspect(append([]string{"--method", "tools/call", "--tool-name", "up__echo", "--tool-arg", "text=" + text}, more...)...)
		if (code == 5) != (got["isError"] == true) {
			t.Errorf("the CLI exited %d on %v", code, got)
		}
		return got
	}
	if r := call("hi"); r["isError"] == true || path(r, "content", 0, "text") != "echo: hi" {
		t.Errorf("a call: %v", r)
	}
	r := call("secret")
	if s, _ := path(r, "content", 0, "text").(string); r["isError"] != true || !strings.Contains(s, "echoing secrets is not allowed here") {
		t.Errorf("a call the policy denies: %v, want isError and the policy's reason", r)
	}
	req := []string{"--header", link.HeaderRequest + ": req_inspector1"}
	for i, want := range []bool{false, false, true} {
		r := call("again", req...)
		if (r["isError"] == true) != want {
			t.Errorf("identical call %d in one request: %v, want isError %v", i+1, r, want)
		}
		if s, _ := path(r, "content", 0, "text").(string); want && !strings.Contains(s, "already ran 2 times") {
			t.Errorf("the third identical call: %q, want the loop's refusal", s)
		}
	}
}
