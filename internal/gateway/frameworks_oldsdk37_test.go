package gateway

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// oldSDKs are the releases of the MCP TypeScript SDK 1.x whose newest
// protocol is an older one, each installed under an alias of its protocol
// (scripts/frameworks-deps.sh, folder mcp-sdk-old/).
var oldSDKs = []string{"sdk-2025-03-26", "sdk-2025-06-18"}

// oldSDKCache is the folder the older SDKs are installed in: mcp-sdk-old/
// beside the frameworks, or REACH_OLD_SDK_CACHE.
func oldSDKCache(t *testing.T, frameworks string) string {
	t.Helper()
	dir := os.Getenv("REACH_OLD_SDK_CACHE")
	if dir == "" {
		dir = filepath.Join(frameworks, "mcp-sdk-old")
	}
	for _, pkg := range oldSDKs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			frameworksMissing(t, pkg, dir)
		}
	}
	return dir
}

// TestFrameworksOlderProtocols: clients that know no protocol newer than
// 2025-03-26 or 2025-06-18 (the MCP TypeScript SDK releases of those
// protocols, on their defaults, over Streamable HTTP) get their own
// protocol from reach, and every answer passes their schema: a success,
// structured content, a tool's error, reach's refusals (a forbidden tool,
// wrong arguments, a loop) as results with isError and reach's text, not
// thrown and not retried. An abort of a call (its AbortSignal) reaches
// reach and ends the upstream call; the session goes on after it.
func TestFrameworksOlderProtocols(t *testing.T) {
	fw, node := frameworksCacheOf(t)
	dir := oldSDKCache(t, fw)
	src, err := os.ReadFile("testdata/frameworks/old-sdk-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "reach-old-sdk-client", src)
	for _, pkg := range oldSDKs {
		version := strings.TrimPrefix(pkg, "sdk-")
		t.Run(version, func(t *testing.T) {
			_, p, srv := upstreamGateway(t, probeConfig+"tools:\n  up__ticks: {access: forbidden}\n")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, script, pkg, srv.URL+"/mcp")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				out []byte
				err error
			}
			done := make(chan result, 1)
			go func() {
				out, err := cmd.Output()
				done <- result{out, err}
			}()
			waitFor(t, p.started, "the slow call to reach the upstream")
			io.WriteString(stdin, "abort\n")
			waitFor(t, p.cancelled, "the client's abort to end the upstream call")
			io.WriteString(stdin, "close\n")
			r := <-done
			if r.err != nil {
				t.Fatalf("old-sdk-client: %v\n%s", r.err, r.out)
			}
			lines := strings.Split(strings.TrimSpace(string(r.out)), "\n")
			var got map[string]any
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
				t.Fatalf("old-sdk-client printed %s", r.out)
			}
			if got["error"] != nil {
				t.Fatalf("old-sdk-client: %v", got["error"])
			}
			if got["protocol"] != version {
				t.Errorf("reach answered initialize with %v, want the client's %s", got["protocol"], version)
			}
			if tools := toStrings(got["tools"]); !slices.Contains(tools, "up__echo") || slices.Contains(tools, "up__ticks") {
				t.Errorf("tools = %v, want up__echo and not the forbidden up__ticks", tools)
			}
			for key, isError := range map[string]bool{"echo": false, "add": false, "fail": true, "forbidden": true, "badArgs": true, "after": false} {
				r, _ := got[key].(map[string]any)
				if r == nil || r["thrown"] != nil || (r["isError"] == true) != isError || path(r, "content", 0, "text") == nil {
					t.Errorf("%s = %v, want a result with isError %v", key, got[key], isError)
				}
			}
			if s, _ := path(got, "echo", "content", 0, "text").(string); s != "echo: hi" {
				t.Errorf("echo = %v", got["echo"])
			}
			if path(got, "add", "structuredContent", "sum") != float64(5) {
				t.Errorf("add = %v, want structured content {sum: 5}", got["add"])
			}
			if s, _ := path(got, "forbidden", "content", 0, "text").(string); !strings.Contains(s, "up__ticks") {
				t.Errorf("forbidden = %v, want reach's refusal naming the tool", got["forbidden"])
			}
			if s, _ := path(got, "badArgs", "content", 0, "text").(string); !strings.Contains(s, "/a") {
				t.Errorf("badArgs = %v, want reach's refusal naming the field", got["badArgs"])
			}
			loop, _ := got["loop"].([]any)
			for i, want := range []bool{false, false, true} {
				r, _ := path(got, "loop", i).(map[string]any)
				if r == nil || r["thrown"] != nil || (r["isError"] == true) != want {
					t.Fatalf("identical call %d = %v, want isError %v (loop %v)", i+1, r, want, loop)
				}
			}
			if s, _ := path(got, "loop", 2, "content", 0, "text").(string); !strings.Contains(s, "already ran 2 times") {
				t.Errorf("the third identical call = %v, want the loop's refusal", path(got, "loop", 2))
			}
			if s, _ := path(got, "aborted", "thrown").(string); s == "" {
				t.Errorf("aborted = %v, want the client's abort thrown to its caller", got["aborted"])
			}
		})
	}
}
