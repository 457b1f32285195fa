package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var inspectorCLIRE = regexp.MustCompile(`(?m)^  npx @modelcontextprotocol/inspector (--cli \S+ --transport http --header "Authorization: Bearer \$REACH_API_KEY" --method tools/list)$`)

// TestBanner35InspectorCLIWithKey: with auth, the banner offers the MCP
// Inspector's CLI with the key's header, and that line, run as copied (by
// a shell, $REACH_API_KEY set, no terminal, as a script or an agent runs
// it), lists reach's tools through the real Inspector. Before, the banner
// offered the Inspector's UI only; its CLI run without the header and
// without a terminal stops at reach's 401 with its own "Interactive OAuth
// requires a TTY", whatever reach answers (it asks reach nothing more),
// so the user is led to the header instead.
func TestBanner35InspectorCLIWithKey(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node")
	}
	cache := os.Getenv("REACH_NPM_CACHE")
	pkgDir := filepath.Join(cache, "node_modules", "@modelcontextprotocol", "inspector")
	node := filepath.Join(cache, "node_modules", "node", "bin", "node")
	data, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if cache == "" || err != nil {
		t.Skip("the MCP Inspector is not installed: set REACH_NPM_CACHE (scripts/npm-deps.sh)")
	}
	if _, err := os.Stat(node); err != nil {
		t.Skipf("the Node the Inspector needs is not installed beside it: %v", err)
	}
	var pkg struct {
		Bin map[string]string `json:"bin"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil || pkg.Bin["mcp-inspector"] == "" {
		t.Fatalf("the Inspector's package.json names no mcp-inspector bin (%v)", err)
	}
	bin := filepath.Join(pkgDir, pkg.Bin["mcp-inspector"])

	dir := t.TempDir()
	var key strings.Builder
	if err := run(t.Context(), []string{"keys", "create", "--principal", "me", "--data", dir}, &key, io.Discard); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, "auth: {keys: true}\n")
	_, _, stdout := startServe(t, "--config", cfg, "--listen", "127.0.0.1:0", "--data", dir)
	m := inspectorCLIRE.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("the banner offers no Inspector CLI line with the key's header:\n%s", stdout.String())
	}
	home := t.TempDir()
	inspect := func(args string) (string, error) {
		cmd := exec.CommandContext(t.Context(), "sh", "-c", `"$NODE" "$BIN" `+args+` --format json`)
		cmd.Env = append(os.Environ(), "NODE="+node, "BIN="+bin, "REACH_API_KEY="+strings.TrimSpace(key.String()),
			"HOME="+home, "NO_COLOR=1", "MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"),
			"MCP_CLIENT_CONFIG_PATH="+filepath.Join(home, "client.json"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out // no terminal on either
		err := cmd.Run()
		return out.String(), err
	}
	out, err := inspect(m[1])
	if err != nil || !regexp.MustCompile(`"name": ?"get_order"`).MatchString(out) {
		t.Errorf("the banner's Inspector line, as copied: %v\n%s", err, out)
	}
	// Without the header and a terminal, what the Inspector shows is its
	// own (logged: reach's 401 carries its words, which it does not read).
	out, _ = inspect(strings.Replace(m[1], ` --header "Authorization: Bearer $REACH_API_KEY"`, "", 1))
	t.Logf("without the header, the Inspector said: %s", strings.TrimSpace(out))
}
