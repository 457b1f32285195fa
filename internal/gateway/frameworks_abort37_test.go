package gateway

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestFrameworksClientAbort: an application that aborts a tool call through
// its MCP client (the AbortSignal each takes) stops the upstream call, on
// the sessionless protocol and on 2025-11-25 alike, and the client's next
// call on the same connection runs: the TypeScript SDK's clients of both
// generations, the AI SDK's tools (@ai-sdk/mcp, sessionless) and
// LangChain's (@langchain/mcp-adapters, 2025-11-25).
func TestFrameworksClientAbort(t *testing.T) {
	dir, node := frameworksCache(t)
	src, err := os.ReadFile("testdata/frameworks/abort-clients.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "reach-abort-clients", src)
	for _, which := range []string{"client", "client-2025-11-25", "sdk1", "ai-sdk", "langchain"} {
		t.Run(which, func(t *testing.T) {
			_, p, srv := upstreamGateway(t, probeConfig)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, script, which, srv.URL+"/mcp")
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
			// The client stays open until the second line, so that only its
			// abort can end the upstream call.
			waitFor(t, p.cancelled, "the client's abort to end the upstream call")
			io.WriteString(stdin, "close\n")
			r := <-done
			if r.err != nil {
				t.Fatalf("abort-clients %s: %v\n%s", which, r.err, r.out)
			}
			lines := strings.Split(strings.TrimSpace(string(r.out)), "\n")
			var got map[string]any
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
				t.Fatalf("abort-clients printed %s", r.out)
			}
			t.Logf("%s: %s", which, lines[len(lines)-1])
			if got["error"] != nil {
				t.Fatalf("abort-clients %s: %v", which, got["error"])
			}
			if r, _ := got["aborted"].(map[string]any); r == nil || r["thrown"] == nil {
				t.Errorf("aborted = %v, want the abort thrown to the application", got["aborted"])
			}
			text, _ := path(got, "after", "content", 0, "text").(string)
			if which == "langchain" { // LangChain's tool gives its content block
				text, _ = path(got, "after", "text").(string)
			}
			if text != "echo: after" {
				t.Errorf("the call after the abort = %v, want its echo", got["after"])
			}
		})
	}
}
