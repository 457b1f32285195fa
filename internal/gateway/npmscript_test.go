package gateway

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runNodeClient runs the client script testdata/file (under name, beside
// the npm packages in cache) against the gateway's MCP endpoint at url
// with key, for at most a minute, and decodes the JSON of the last line
// it prints into v.
func runNodeClient(t *testing.T, cache, file, name, url, key string, v any) {
	t.Helper()
	src, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, cache, name, src)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", script, url+"/mcp", key).CombinedOutput()
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("node client printed %s", out)
	}
}
