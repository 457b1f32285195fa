package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentreach/reach/internal/link"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An example policy in front of the real server-filesystem refuses path
// traversal and paths outside the sandbox before the call reaches it; a
// plain read inside the sandbox goes through.
func TestFilesystemTraversalPolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	cache := npmCache(t)
	fsServer := filepath.Join(cache, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
	if _, err := os.Stat(fsServer); err != nil {
		t.Skip("server-filesystem not installed (scripts/npm-deps.sh)")
	}
	sandbox, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sandbox, "notes.txt"), []byte("hello from the sandbox"), 0o644)
	policy := filepath.Join(t.TempDir(), "fs.cedar")
	os.WriteFile(policy, []byte(fmt.Sprintf(`// Everything is allowed, except paths that climb out of the sandbox.
permit(principal, action, resource);

@reason("paths may not contain .. and must stay inside the sandbox")
forbid(principal, action, resource)
when {
  context.arguments has path &&
  (context.arguments.path like "*..*" || !(context.arguments.path like "%s/*"))
};
`, sandbox)), 0o644)
	cfg, err := config.Parse([]byte(fmt.Sprintf(`upstreams:
  - name: fs
    command: [node, %s, %s]
policy: {path: %s}
`, fsServer, sandbox, policy)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	rt := g.Runtime()
	if _, ok := rt.Tool("fs__read_text_file"); !ok {
		t.Fatalf("server-filesystem's tools are missing: %v", rt.Tools())
	}
	ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{Principal: "local"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	read := func(id, path string) *reach.Result {
		args, _ := json.Marshal(map[string]string{"path": path})
		return rt.Call(ctx, &reach.Call{ID: id, Tool: "fs__read_text_file", Arguments: args})
	}
	if res := read("ok", filepath.Join(sandbox, "notes.txt")); res.IsError() || !strings.Contains(res.ModelText(), "hello from the sandbox") {
		t.Fatalf("a read inside the sandbox: %s", res.ModelText())
	}
	for i, hostile := range []string{
		sandbox + "/../../etc/passwd",
		"/etc/passwd",
		sandbox + "/sub/../../" + filepath.Base(sandbox) + "x/secret",
	} {
		res := read(fmt.Sprint("bad", i), hostile)
		// Refused by the authorize stage: the upstream never saw it.
		if res.Status != reach.StatusRefused || res.Error.Guard != "authorize" || !strings.Contains(res.Error.Message, "sandbox") {
			t.Errorf("%s: %s %+v, want a policy refusal before the upstream", hostile, res.Status, res.Error)
		}
	}
}

// TestFilesystemPassthrough: an MCP client that calls the real
// server-filesystem's read_text_file through the gateway gets what the
// server sent: the text block "hello from fs" as it is, and the same
// structuredContent, not the structured content's JSON in place of the
// text; with a shape: on the tool, the client gets reach's shaped result
// (cut to text, with isError: the tool lists an output schema).
func TestFilesystemPassthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	cache := npmCache(t)
	fsServer := filepath.Join(cache, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
	if _, err := os.Stat(fsServer); err != nil {
		t.Skip("server-filesystem not installed (scripts/npm-deps.sh)")
	}
	sandbox, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(sandbox, "notes.txt")
	os.WriteFile(file, []byte("hello from fs\n"), 0o644)
	// Read it directly from the server first: what it sends is the
	// reference.
	direct := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil)
	dcs, err := direct.Connect(t.Context(), &mcp.CommandTransport{Command: exec.Command("node", fsServer, sandbox)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := dcs.CallTool(t.Context(), &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": file}})
	dcs.Close()
	if err != nil || want.StructuredContent == nil {
		t.Fatalf("server-filesystem directly: %v %+v (this test wants a result with structuredContent)", err, want)
	}
	for _, shaped := range []bool{false, true} {
		t.Run(fmt.Sprint("shaped=", shaped), func(t *testing.T) {
			extra := ""
			if shaped {
				extra = "tools:\n  fs__read_text_file: {shape: {max_bytes: 8}}\n"
			}
			cfg, err := config.Parse([]byte(fmt.Sprintf("upstreams:\n  - name: fs\n    command: [node, %s, %s]\n%s", fsServer, sandbox, extra)), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			g := newTestGateway(t, cfg)
			cs := connectMCP(t, g, nil)
			got, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "fs__read_text_file", Arguments: map[string]any{"path": file}})
			// Cut to text, the result of a tool listed with an output
			// schema is an error (the schema's clients would throw a
			// success without structured content away).
			if err != nil || got.IsError != shaped {
				t.Fatalf("through the gateway: %v %+v (want isError %v)", err, got, shaped)
			}
			wantContent, _ := json.Marshal(want.Content)
			gotContent, _ := json.Marshal(got.Content)
			wantSC, _ := json.Marshal(want.StructuredContent)
			gotSC, _ := json.Marshal(got.StructuredContent)
			if !shaped {
				if string(gotContent) != string(wantContent) || string(gotSC) != string(wantSC) {
					t.Errorf("the client got content %s, structuredContent %s; the server sent %s and %s", gotContent, gotSC, wantContent, wantSC)
				}
				if got.Meta[link.MetaRequest] == nil || got.Meta[link.MetaFrame] == nil {
					t.Errorf("the result lacks reach's _meta: %v", got.Meta)
				}
				return
			}
			if string(gotContent) == string(wantContent) {
				t.Errorf("with shape: max_bytes 8, the client got the upstream's blocks unshaped: %s", gotContent)
			}
		})
	}
}
