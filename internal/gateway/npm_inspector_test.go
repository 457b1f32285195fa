package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveNPM runs a gateway with the configuration cfgText (its data in a
// temporary folder) on a free loopback port, as `reach serve` would, and
// returns its base URL.
func serveNPM(t *testing.T, cfgText string) string {
	t.Helper()
	cfg, err := config.Parse([]byte(cfgText), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Data = t.TempDir()
	g, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served })
	return "http://" + ln.Addr().String()
}

// inspectorCLI finds the MCP Inspector that scripts/npm-deps.sh installs
// and a node that can run it (the Inspector needs Node 22.19: the Node 22
// installed beside it, else the system node when it is new enough), or
// skips.
func inspectorCLI(t *testing.T, cache string) (node, bin string) {
	t.Helper()
	pkgDir := filepath.Join(cache, "node_modules", "@modelcontextprotocol", "inspector")
	data, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		t.Skipf("@modelcontextprotocol/inspector is not installed in %s: run scripts/npm-deps.sh (make test does)", cache)
	}
	var pkg struct {
		Bin map[string]string `json:"bin"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil || pkg.Bin["mcp-inspector"] == "" {
		t.Fatalf("the Inspector's package.json names no mcp-inspector bin (%v)", err)
	}
	bin = filepath.Join(pkgDir, pkg.Bin["mcp-inspector"])
	node = filepath.Join(cache, "node_modules", "node", "bin", "node")
	if _, err := os.Stat(node); err == nil {
		return node, bin
	}
	out, err := exec.Command("node", "-p", "process.versions.node").Output()
	if err != nil {
		t.Skipf("node -p process.versions.node: %v", err)
	}
	v := strings.Split(strings.TrimSpace(string(out)), ".")
	major, _ := strconv.Atoi(v[0])
	minor := 0
	if len(v) > 1 {
		minor, _ = strconv.Atoi(v[1])
	}
	if major < 22 || major == 22 && minor < 19 {
		t.Skipf("the MCP Inspector needs Node 22.19 or newer; the system node is %s and %s is missing: run scripts/npm-deps.sh", strings.TrimSpace(string(out)), node)
	}
	return "node", bin
}

// inspectorRun is what one run of the Inspector CLI printed (--format json):
// the result on stdout, an error envelope on stderr, and its exit code.
type inspectorRun struct {
	Result map[string]any // stdout's "result"
	Error  map[string]any // stderr's "error", if any
	Code   int
	Out    string
}

func runInspector(t *testing.T, node, bin, home, url string, args ...string) inspectorRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := append([]string{bin, "--cli", url, "--transport", "http", "--format", "json"}, args...)
	cmd := exec.CommandContext(ctx, node, argv...)
	// Its catalog, client configuration and stored secrets go to a
	// temporary home, never the user's.
	cmd.Env = append(os.Environ(), "HOME="+home, "NO_COLOR=1",
		"MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"),
		"MCP_CLIENT_CONFIG_PATH="+filepath.Join(home, "client.json"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var r inspectorRun
	r.Out = "stdout: " + stdout.String() + "\nstderr: " + stderr.String()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		r.Code = ee.ExitCode()
	default:
		t.Fatalf("mcp-inspector %s: %v\n%s", strings.Join(args, " "), err, r.Out)
	}
	var res struct {
		Result map[string]any `json:"result"`
	}
	if s := bytes.TrimSpace(stdout.Bytes()); len(s) > 0 {
		if err := json.Unmarshal(s, &res); err != nil {
			t.Fatalf("mcp-inspector %s printed no JSON result: %v\n%s", strings.Join(args, " "), err, r.Out)
		}
	}
	r.Result = res.Result
	// stderr may carry status lines before the error envelope: take the
	// last line that is one.
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var e struct {
			Error map[string]any `json:"error"`
		}
		if json.Unmarshal([]byte(lines[i]), &e) == nil && e.Error != nil {
			r.Error = e.Error
			break
		}
	}
	return r
}

// TestNPMInspector runs the MCP Inspector's CLI (from npm) in front of
// reach, which is in front of the real server-everything: tools/list shows
// the exposed names with annotations from the access levels, tools/call
// runs a tool, a bad argument gets reach's validation error and a tool the
// configuration holds back gets reach's refusal, both as isError results.
func TestNPMInspector(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	cache := npmCache(t)
	node, bin := inspectorCLI(t, cache)
	everything := startEverything(t, cache)
	base := serveNPM(t, `upstreams:
  - name: everything
    url: `+everything+`
tools:
  everything__get-env: {access: forbidden}
  everything__get-tiny-image: {access: high_risk}
`)
	url := base + "/mcp"
	home := t.TempDir()
	inspect := func(args ...string) inspectorRun { return runInspector(t, node, bin, home, url, args...) }
	text := func(r inspectorRun) string { s, _ := path(r.Result, "content", 0, "text").(string); return s }
	isError := func(r inspectorRun) bool { b, _ := path(r.Result, "isError").(bool); return b }

	t.Run("tools/list", func(t *testing.T) {
		r := inspect("--method", "tools/list")
		if r.Code != 0 {
			t.Fatalf("exit code %d\n%s", r.Code, r.Out)
		}
		tools := map[string]map[string]any{}
		list, _ := r.Result["tools"].([]any)
		for _, x := range list {
			tool, _ := x.(map[string]any)
			name, _ := tool["name"].(string)
			ann, _ := tool["annotations"].(map[string]any)
			tools[name] = ann
			if !strings.HasPrefix(name, "everything__") {
				t.Errorf("tools/list has %q: every upstream tool should be exposed as everything__<name>", name)
			}
		}
		for name, readOnly := range map[string]bool{
			"everything__echo":                           true,
			"everything__get-sum":                        true,
			"everything__trigger-long-running-operation": true,
			"everything__toggle-simulated-logging":       false,
		} {
			ann, ok := tools[name]
			if !ok {
				t.Errorf("tools/list lacks %s (got %d tools)", name, len(tools))
				continue
			}
			if ann == nil || ann["readOnlyHint"] != readOnly {
				t.Errorf("%s annotations = %v, want readOnlyHint %v", name, ann, readOnly)
			}
		}
		// high_risk from the configuration: destructive, whatever the
		// upstream said (it says read-only).
		if ann := tools["everything__get-tiny-image"]; ann == nil || ann["destructiveHint"] != true || ann["readOnlyHint"] == true {
			t.Errorf("everything__get-tiny-image (high_risk) annotations = %v, want destructiveHint and not readOnlyHint", ann)
		}
		// forbidden: not listed at all.
		if _, ok := tools["everything__get-env"]; ok {
			t.Errorf("tools/list shows everything__get-env, which the configuration forbids")
		}
	})

	t.Run("tools/call echo", func(t *testing.T) {
		r := inspect("--method", "tools/call", "--tool-name", "everything__echo", "--tool-arg", "message=hi from the inspector")
		if r.Code != 0 || isError(r) || text(r) != "Echo: hi from the inspector" {
			t.Errorf("everything__echo: exit %d, result %v\n%s", r.Code, r.Result, r.Out)
		}
		if path(r.Result, "_meta", "reach/status") != "success" {
			t.Errorf("everything__echo result _meta = %v, want reach/status success", path(r.Result, "_meta"))
		}
		r = inspect("--method", "tools/call", "--tool-name", "everything__get-sum", "--tool-arg", "a=2", "b=3")
		if r.Code != 0 || isError(r) || !strings.Contains(text(r), "5") {
			t.Errorf("everything__get-sum 2+3: exit %d, result %v\n%s", r.Code, r.Result, r.Out)
		}
	})

	t.Run("tools/call bad argument", func(t *testing.T) {
		// --tool-args-json, because --tool-arg coerces a value to the
		// schema's type; the Inspector passes an array through as it is.
		r := inspect("--method", "tools/call", "--tool-name", "everything__get-sum", "--tool-args-json", `{"a": [1], "b": 3}`)
		if !isError(r) || !strings.Contains(text(r), "/a") || !strings.Contains(text(r), "want number") {
			t.Errorf("everything__get-sum with a bad argument: result %v, want reach's validation error\n%s", r.Result, r.Out)
		}
		// Reach refused it before the upstream (whose own error would not
		// carry reach/error).
		if path(r.Result, "_meta", "reach/error", "guard") != "validate" || path(r.Result, "_meta", "reach/status") != "refused" {
			t.Errorf("everything__get-sum with a bad argument: _meta = %v, want reach's validate guard", path(r.Result, "_meta"))
		}
		if r.Code == 0 || path(r.Error, "code") != "tool_is_error" {
			t.Errorf("the Inspector should report an isError result: exit %d, error %v", r.Code, r.Error)
		}
	})

	t.Run("tools/call high_risk", func(t *testing.T) {
		r := inspect("--method", "tools/call", "--tool-name", "everything__get-tiny-image")
		if !isError(r) || !strings.Contains(text(r), "approval") || path(r.Result, "_meta", "reach/status") == "success" {
			t.Errorf("everything__get-tiny-image (high_risk): result %v, want a refusal pending approval\n%s", r.Result, r.Out)
		}
		if r.Code == 0 {
			t.Errorf("the Inspector exited 0 on a refusal")
		}
		// The refusal is in reach's approval queue.
		code, body := do(t, "GET", base+"/v1/approvals?status=pending", "", nil)
		found := false
		list, _ := body["approvals"].([]any)
		for _, a := range list {
			if path(a, "tool") == "everything__get-tiny-image" {
				found = true
			}
		}
		if code != 200 || !found {
			t.Errorf("GET /v1/approvals?status=pending: %d %v, want the held everything__get-tiny-image", code, body)
		}
	})

	t.Run("tools/call forbidden", func(t *testing.T) {
		// The Inspector checks the tool list before it calls: a tool reach
		// does not list is refused on the client's side.
		r := inspect("--method", "tools/call", "--tool-name", "everything__get-env")
		if r.Code == 0 || r.Result != nil || path(r.Error, "code") != "tool_not_found" {
			t.Errorf("everything__get-env (forbidden) through the Inspector: exit %d, result %v, error %v, want tool_not_found\n%s", r.Code, r.Result, r.Error, r.Out)
		}
		// A client that calls it anyway gets reach's refusal.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "npm-inspector-test", Version: "1.0.0"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__get-env", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(contentText(res.Content), "You may not call everything__get-env") {
			t.Errorf("everything__get-env (forbidden) called directly: isError %v, %q, want reach's refusal", res.IsError, contentText(res.Content))
		}
		if path(map[string]any(res.Meta), "reach/status") != "refused" {
			t.Errorf("everything__get-env (forbidden): _meta %v, want reach/status refused", res.Meta)
		}
	})
}
