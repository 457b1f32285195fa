package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/agentreach/reach/internal/demo"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testUpstream is a Go MCP server with a read tool, a slow tool and a
// destructive tool, served over Streamable HTTP on loopback.
func testUpstream(t *testing.T) (url string, started, cancelled chan struct{}) {
	started, cancelled = make(chan struct{}, 4), make(chan struct{}, 4)
	s := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	yes := true
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Wait.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ in) (*mcp.CallToolResult, any, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				cancelled <- struct{}{}
				return nil, nil, ctx.Err()
			case <-time.After(20 * time.Second):
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "drop_table", Description: "Drop a table.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, any, error) {
			t.Error("drop_table ran; reach should have refused it")
			return &mcp.CallToolResult{}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{PropagateRequestCancellation: true}))
	t.Cleanup(srv.Close)
	return srv.URL, started, cancelled
}

var servingRE = regexp.MustCompile(`reach is serving (\d+) tools on (\S+)\n`)

// startServe runs `reach serve` in process and returns its base URL.
func startServe(t *testing.T, args ...string) (base string, stop func() error, stdout *lockedBuffer) {
	t.Helper()
	return startCmd(t, append([]string{"serve"}, args...)...)
}

// startCmd runs a command that serves, and waits for its banner.
func startCmd(t *testing.T, args ...string) (base string, stop func() error, stdout *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, args, stdout, stderr) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := servingRE.FindStringSubmatch(stdout.String()); m != nil {
			base = "http://" + m[2]
			break
		}
		select {
		case err := <-errc:
			t.Fatalf("serve exited: %v\nstderr: %s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-errc:
			case <-time.After(10 * time.Second):
				t.Error("serve did not shut down within 10s")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return base, stop, stdout
}

func writeConfig(t testing.TB, text string) string {
	p := filepath.Join(t.TempDir(), "reach.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func getJSON(t *testing.T, method, url, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s %s: %d %q", method, url, resp.StatusCode, data)
	}
	return out
}

// TestServeEndToEnd starts `reach serve` on a free loopback port in front
// of a Go upstream, and drives it with the go-sdk client over Streamable
// HTTP: list, call, a refusal, a cancel through the API, the graph.
func TestServeEndToEnd(t *testing.T) {
	up, started, cancelled := testUpstream(t)
	cfg := writeConfig(t, "upstreams:\n  - name: shop\n    url: "+up+"\nbudgets:\n  default: {tool_calls: 50, wall: 1m}\n")
	base, stop, stdout := startServe(t, "--config", cfg, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	for _, want := range []string{base + "/mcp", base + "/v1/", "npx @modelcontextprotocol/inspector", "upstream  shop (http): 3 tools"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, stdout.String())
		}
	}

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "shop__drop_table,shop__echo,shop__slow" {
		t.Errorf("tools/list = %s", got)
	}

	meta := mcp.Meta{"reach/request": "e2e"}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop__echo", Arguments: map[string]any{"text": "hello"}, Meta: meta})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "echo: hello" {
		t.Fatalf("shop__echo: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop__drop_table", Arguments: map[string]any{"text": "users"}, Meta: meta})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "approval") {
		t.Fatalf("shop__drop_table: %v %+v, want a refusal with isError", err, res)
	}

	// Cancel a call in flight through the API; the upstream call is cancelled too.
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop__slow", Arguments: map[string]any{"text": "x"}, Meta: meta})
		if err != nil {
			t.Errorf("shop__slow: %v", err)
		}
		done <- r
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow call did not reach the upstream")
	}
	if out := getJSON(t, "POST", base+"/v1/requests/e2e/cancel", `{"mode":"cancel","reason":"e2e stop"}`); out["state"] != "stopped_cancel" {
		t.Fatalf("cancel: %v", out)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream call was not cancelled")
	}
	if r := <-done; r == nil || !r.IsError || !strings.Contains(r.Content[0].(*mcp.TextContent).Text, "e2e stop") {
		t.Errorf("the cancelled call returned %+v", r)
	}

	// The graph shows the three calls and their states.
	g := getJSON(t, "GET", base+"/v1/requests/e2e/graph?format=json", "")
	states := map[string]string{}
	for _, f := range g["frames"].([]any) {
		m := f.(map[string]any)
		states[m["name"].(string)] = m["status"].(string)
	}
	// The approval drop_table waited for expired with the request's
	// stop: its frame ends with the stop (cancelled, stopped_cancel), not
	// left awaiting an approval nobody can give any more.
	want := map[string]string{"shop__echo": "completed", "shop__drop_table": "cancelled", "shop__slow": "cancelled"}
	for k, v := range want {
		if states[k] != v {
			t.Errorf("graph: %s is %q, want %q (all: %v)", k, states[k], v, states)
		}
	}
	if list := getJSON(t, "GET", base+"/v1/requests", ""); len(list["requests"].([]any)) == 0 {
		t.Errorf("no requests listed")
	}
	// The CLI clients of the same API.
	if out, err := runCLI(t, "graph", "e2e", "--api", base); err != nil || !strings.Contains(out, "<svg") || !strings.Contains(out, "shop__slow") {
		t.Errorf("reach graph: %v\n%.300s", err, out)
	}
	if out, err := runCLI(t, "graph", "e2e", "--format", "dot", "--api", base); err != nil || !strings.HasPrefix(out, "digraph") {
		t.Errorf("reach graph --format dot: %v\n%.300s", err, out)
	}
	if out, err := runCLI(t, "requests", "--api", base); err != nil || !strings.Contains(out, "e2e") || !strings.Contains(out, "stopped (cancel)") {
		t.Errorf("reach requests: %v\n%s", err, out)
	}
	if _, err := runCLI(t, "graph", "nobody", "--api", base); err == nil {
		t.Errorf("reach graph of an unknown request succeeded")
	}

	if err := stop(); err != nil {
		t.Errorf("serve returned %v after shutdown, want nil", err)
	}
	if !strings.Contains(stdout.String(), "reach stopped") {
		t.Errorf("no shutdown message")
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Errorf("the gateway still answers after shutdown")
	}
}

func TestServeDefaultsToExamples(t *testing.T) {
	base, _, stdout := startServe(t, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	if !strings.Contains(stdout.String(), "format_answer, get_order, refund_order, search_kb") {
		t.Errorf("banner:\n%s", stdout.String())
	}
	out := getJSON(t, "POST", base+"/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"format_answer","arguments":{"text":"how long does shipping take"}}]}`)
	if md, _ := out["results"].([]any)[0].(map[string]any)["data"].(map[string]any)["markdown"].(string); !strings.Contains(md, "Shipping times") {
		t.Errorf("format_answer: %v", out)
	}
}

func TestServeRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:7400", ":7400", "192.168.1.2:80"} {
		err := run(context.Background(), []string{"serve", "--listen", addr}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("serve --listen %s: %v, want a loopback refusal", addr, err)
		}
	}
	cfg := writeConfig(t, "listen: 0.0.0.0:7400\n")
	if err := run(context.Background(), []string{"serve", "--config", cfg}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("listen in the config: %v, want an error naming line 1", err)
	}
}

func TestValidate(t *testing.T) {
	up, _, _ := testUpstream(t)
	cases := []struct {
		name, config string
		args         []string
		wantErr      string
		wantOut      string
	}{
		{"ok", "upstreams:\n  - {name: shop, url: '" + up + "'}\n", nil, "", "ok, 3 tools from 1 upstream\n"},
		{"override of a missing tool", "upstreams:\n  - {name: shop, url: '" + up + "'}\ntools:\n  shop__ech0: {access: read}\n", nil, "line 4", ""},
		{"unknown field", "upstream:\n  - {name: shop}\n", nil, "line 1: unknown field upstream", ""},
		{"offline skips upstreams", "upstreams:\n  - {name: far, url: 'http://127.0.0.1:1/mcp'}\n", []string{"--offline"}, "", "offline"},
		{"unreachable upstream", "upstreams:\n  - {name: far, url: 'http://127.0.0.1:1/mcp', timeout: 2s}\n", nil, "upstream far", ""},
		{"a write without an undo is warned about", "upstreams:\n  - {name: shop, url: '" + up + "'}\n", nil, "",
			"warning: tool shop__drop_table is a high_risk tool with neither an undo nor an idempotency key"},
		{"an undo naming no tool is warned about", "upstreams:\n  - {name: shop, url: '" + up + "'}\ntools:\n  shop__drop_table: {undo: {tool: shop__restore, args: '{\"text\": \"{args.text}\"}'}}\n", nil, "",
			"warning: tool shop__drop_table: its undo names shop__restore, which is not a tool here"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), append([]string{"validate", "--config", writeConfig(t, tc.config)}, tc.args...), &out, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("err %v, out %q, want %q", err, out.String(), tc.wantOut)
			}
		})
	}
	if err := run(context.Background(), []string{"validate"}, io.Discard, io.Discard); err == nil {
		t.Error("validate without --config succeeded")
	}
}

// TestStdio serves the built-in examples over stdio through pipes.
func TestStdio(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRoot(outW, io.Discard)
	root.SetIn(inR)
	root.SetArgs([]string{"stdio"})
	errc := make(chan error, 1)
	go func() { errc <- root.ExecuteContext(ctx); outW.Close() }()
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_order", Arguments: map[string]any{"order_id": "1002"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "Grace") {
		t.Fatalf("get_order over stdio: %v %+v", err, res)
	}
	cs.Close()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("stdio returned %v after the client left", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("stdio did not return after the client closed")
	}
}

// TestStdioListen: reach stdio --listen serves the API beside stdio, so
// that a call waiting for approval can be decided: without it, reach
// stdio served no HTTP, `reach approvals` found no gateway, and a
// high_risk call waited until it expired. An address it may not serve is
// refused before stdio starts.
func TestStdioListen(t *testing.T) {
	cfg := writeConfig(t, "examples: true\ndata: ./state\ntools:\n  refund_order: {access: high_risk}\n")
	if err := run(t.Context(), []string{"stdio", "--config", cfg, "--listen", "0.0.0.0:0"}, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "auth") {
		t.Errorf("stdio --listen 0.0.0.0:0 without auth: %v, want refused", err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr := &lockedBuffer{}
	root := newRoot(outW, stderr)
	root.SetIn(inR)
	root.SetArgs([]string{"stdio", "--config", cfg, "--listen", "127.0.0.1:0"})
	errc := make(chan error, 1)
	go func() { errc <- root.ExecuteContext(ctx); outW.Close() }()
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`api=(http://[^ ]+)/v1/`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("stdio --listen logged no API address:\n%s", stderr.String())
	}
	base := m[1]
	refund := &mcp.CallToolParams{Name: "refund_order", Arguments: map[string]any{"order_id": "1001", "amount": 5, "reason": "damaged"}}
	res, err := cs.CallTool(ctx, refund)
	if err != nil || !res.IsError {
		t.Fatalf("refund_order, high_risk: %v %+v, want it waiting for approval", err, res)
	}
	list := getJSON(t, "GET", base+"/v1/approvals?status=pending", "")
	aps, _ := list["approvals"].([]any)
	if len(aps) != 1 {
		t.Fatalf("pending approvals over --listen: %v", list)
	}
	id, _ := aps[0].(map[string]any)["id"].(string)
	getJSON(t, "POST", base+"/v1/approvals/"+id+"/approve", `{"reason": "ok"}`)
	res, err = cs.CallTool(ctx, refund)
	if err != nil || res.IsError {
		t.Errorf("refund_order once approved: %v %+v", err, res)
	}
	cs.Close()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("stdio returned %v after the client left", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stdio did not return after the client closed")
	}
	if _, err := http.Get(base + "/livez"); err == nil {
		t.Error("the API still answers after stdio ended")
	}
}

// TestExampleConfig keeps examples/reach.yaml valid.
func TestExampleConfig(t *testing.T) {
	t.Setenv("EVERYTHING_TOKEN", "test-token")
	var out bytes.Buffer
	if err := run(context.Background(), []string{"validate", "--offline", "--config", "../../examples/reach.yaml"}, &out, io.Discard); err != nil {
		t.Fatalf("examples/reach.yaml: %v", err)
	}
	os.Unsetenv("EVERYTHING_TOKEN")
	err := run(context.Background(), []string{"validate", "--offline", "--config", "../../examples/reach.yaml"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "${EVERYTHING_TOKEN} is not set") || !strings.Contains(err.Error(), "line ") {
		t.Errorf("without EVERYTHING_TOKEN: %v, want an error naming the variable and its line", err)
	}
}

// TestDemoServe: reach demo --serve prints the table, then serves the
// example tools with the UI until its context ends.
func TestDemoServe(t *testing.T) {
	base, stop, stdout := startCmd(t, "demo", "--serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--out", t.TempDir())
	for _, want := range []string{"call graphs:", base + "/ui/", base + "/mcp"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	for _, p := range []string{"/ui/", "/healthz", "/metrics"} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d", p, resp.StatusCode)
		}
	}
	// The UI shows the scenarios it ran: each a request with its graph.
	resp, err := http.Get(base + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ids := regexp.MustCompile(`<tr data-request="([^"]+)"`).FindAllSubmatch(page, -1)
	if want := len(demo.Run(t.Context())); len(ids) < want {
		t.Fatalf("the UI lists %d requests, want the %d scenarios the demo ran", len(ids), want)
	}
	resp, err = http.Get(base + "/ui/requests/" + string(ids[0][1]))
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), `<g class="frame`) {
		t.Errorf("a scenario's page = %d, with no graph", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Errorf("demo --serve ended with %v, want nil on cancel", err)
	}
	if !strings.Contains(stdout.String(), "reach stopped") {
		t.Errorf("no shutdown line:\n%s", stdout.String())
	}
}

// TestServeWithAuth: with auth configured, serve may listen beyond
// loopback, and every path but /healthz needs a key.
func TestServeWithAuth(t *testing.T) {
	data := t.TempDir()
	keys, err := auth.OpenKeys(auth.KeysPath(data))
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := keys.Create(auth.KeySpec{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, "examples: true\nauth: {keys: true}\ndata: "+data+"\n")
	base, _, stdout := startServe(t, "--config", cfg, "--listen", "0.0.0.0:0")
	if !strings.Contains(stdout.String(), "needs credentials") {
		t.Errorf("the banner does not say credentials are needed:\n%s", stdout.String())
	}
	for _, tc := range []struct {
		path, key string
		want      int
	}{
		{"/healthz", "", 200}, {"/v1/requests", "", 401}, {"/v1/tools", "rk_wrong", 401}, {"/v1/tools", secret, 200}, {"/ui/", secret, 200},
	} {
		req, _ := http.NewRequest("GET", base+tc.path, nil)
		if tc.key != "" {
			req.Header.Set("Authorization", "Bearer "+tc.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s (with a key: %v) = %d, want %d", tc.path, tc.key != "", resp.StatusCode, tc.want)
		}
	}
}

// TestServeErrorNamesFile: serve and stdio name the configuration file in
// an error about one of its lines, as validate does; they said "line 3: ..."
// alone.
func TestServeErrorNamesFile(t *testing.T) {
	cfg := writeConfig(t, "listen: 127.0.0.1:0\ntools:\n  get_ordr: {access: forbidden}\n")
	for _, args := range [][]string{{"serve", "--config", cfg, "--data", t.TempDir()}, {"stdio", "--config", cfg}, {"validate", "--config", cfg}, {"validate", "--offline", "--config", cfg}} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), cfg+": line 3: ") || !strings.Contains(err.Error(), "did you mean get_order?") {
			t.Errorf("%s: %v, want %s: line 3: ... did you mean get_order?", args[0], err, cfg)
		}
	}
}

// TestValidateWarnsOfPolicyThatNeverApplies: validate reports a policy that
// can never apply; it said ok to a forbid without the Reach namespace, which
// the gateway drops, so the call it names runs.
func TestValidateWarnsOfPolicyThatNeverApplies(t *testing.T) {
	cfg := writeConfig(t, "policy: {path: ./p.cedar}\n")
	policy := filepath.Join(filepath.Dir(cfg), "p.cedar")
	if err := os.WriteFile(policy, []byte("permit (principal, action, resource);\nforbid (principal, action == Action::\"call\", resource == Reach::Tool::\"refund_order\");\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(context.Background(), []string{"validate", "--offline", "--config", cfg}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if want := "warning: policy: " + policy + ":2 can never apply"; !strings.Contains(out.String(), want) {
		t.Errorf("validate:\n%s\nwant %q", out.String(), want)
	}
}

// TestValidateWarnsOfPolicyScopedToNothing: validate reports a policy
// scoped to an upstream or a tool the gateway does not have (a typo, or an
// upstream named by its prefix), with the name meant: such a forbid
// forbids nothing, and validate said ok. Offline, a tool an upstream could
// expose is not reported.
func TestValidateWarnsOfPolicyScopedToNothing(t *testing.T) {
	cfg := writeConfig(t, "examples: true\nupstreams:\n  - {name: files, url: \"http://127.0.0.1:1/mcp\"}\npolicy: {path: ./p.cedar}\n")
	policy := filepath.Join(filepath.Dir(cfg), "p.cedar")
	if err := os.WriteFile(policy, []byte(`permit (principal, action, resource);
forbid (principal, action, resource in Reach::Upstream::"files__");
forbid (principal, action, resource == Reach::Tool::"refund_ordr");
forbid (principal, action, resource in Reach::Upstream::"files");
forbid (principal, action, resource == Reach::Tool::"files__write");
forbid (principal, action, resource == Reach::Tool::"refund_order");
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(context.Background(), []string{"validate", "--offline", "--config", cfg}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"warning: policy: " + policy + `:2 is scoped to Reach::Upstream::"files__", which is no upstream here (did you mean files?)`,
		"warning: policy: " + policy + `:3 is scoped to Reach::Tool::"refund_ordr", which is no tool here (did you mean refund_order?)`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("validate:\n%s\nwant %q", out.String(), want)
		}
	}
	for _, line := range []string{":4 ", ":5 ", ":6 "} {
		if strings.Contains(out.String(), policy+line) {
			t.Errorf("validate:\n%s\nwarns of the policy at line %s, which names what is (or may be) there", out.String(), line)
		}
	}
}

// TestValidateWarnsOfListenInUse: a configuration whose listen address is
// taken is ok to validate (it may be the running gateway's), with a warning
// that reach serve would not start, and what to do.
func TestValidateWarnsOfListenInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	var out strings.Builder
	if err := run(context.Background(), []string{"validate", "--offline", "--config", writeConfig(t, "listen: "+addr+"\n")}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if want := "warning: listen: " + addr + " is in use now"; !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "--listen") {
		t.Errorf("validate:\n%s\nwant %q, saying what to do", out.String(), want)
	}
	ln.Close()
	out.Reset()
	if err := run(context.Background(), []string{"validate", "--offline", "--config", writeConfig(t, "listen: "+addr+"\n")}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "warning: listen") {
		t.Errorf("validate of a free address:\n%s\nwant no warning", out.String())
	}
}
