package upstream

import (
	"os"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestStdioUpstreamSkipsLinesNotJSON: many stdio servers print a banner or
// a log line to stdout. The reference clients skip a line that is not a
// JSON-RPC message and read on; reach's upstream was never reachable (the
// SDK's decoder stops at the first byte it cannot read).
func TestStdioUpstreamSkipsLinesNotJSON(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Upstreams: []config.Upstream{{Name: "io",
		Command: []string{"sh", "-c", `echo "Server v1 starting on stdio"; echo; echo '{"not": "a message"}'; exec "$0"`, exe},
		Env:     map[string]config.Secret{"REACH_TEST_STDIO_UPSTREAM": "1"}}}}
	p := newPool(t, cfg)
	if got := echo(t, p, "io__echo", "hi"); got != "echo: hi" {
		t.Fatalf("echo = %q, want %q", got, "echo: hi")
	}
}
