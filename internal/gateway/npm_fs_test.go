package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
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
