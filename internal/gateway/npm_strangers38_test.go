package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestNPMStrictClientLogging runs the official TypeScript SDK client on its
// strict setting (testdata/npm-logging38.mjs) against reach in front of
// the real server-everything:
//
//   - reach declares the logging capability: it takes logging/setLevel and
//     passes log messages on, and a client that holds a server to its
//     capabilities refused to send logging/setLevel without it;
//   - a client with an upstream session of its own (it can sample) gets
//     the log messages the upstream sends on that session outside any
//     call (server-everything's simulated logging, turned on by a tool
//     call, logs every 5 seconds after it returned): they were dropped;
//   - another such client gets none of them.
func TestNPMStrictClientLogging(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	cache := npmCache(t)
	everything := startEverything(t, cache)
	base := serveNPM(t, `upstreams:
  - name: everything
    url: `+everything+`
`)
	var got struct {
		Logging              map[string]any
		SetLevelA, SetLevelB map[string]any
		Toggle, ToggleOff    map[string]any
		A, B                 struct {
			Logs []struct {
				Level, Data string
				AfterCall   bool
			}
			Errors []string
		}
	}
	runNodeClient(t, cache, "npm-logging38.mjs", "reach-npm-logging38", base, "", &got)
	if got.Logging == nil {
		t.Errorf("reach's capabilities have no logging")
	}
	if got.SetLevelA["thrown"] != nil || got.SetLevelB["thrown"] != nil {
		t.Fatalf("logging/setLevel: %v, %v; want both answered", got.SetLevelA, got.SetLevelB)
	}
	if got.Toggle["isError"] == true || got.Toggle["thrown"] != nil {
		t.Fatalf("everything__toggle-simulated-logging = %v", got.Toggle)
	}
	after := 0
	for _, l := range got.A.Logs {
		if l.AfterCall {
			after++
		}
		if !strings.Contains(l.Data, "-level message") && !strings.Contains(l.Data, "level-message") {
			t.Errorf("client A got a log message it did not turn on: %+v", l)
		}
	}
	if after < 2 {
		t.Errorf("client A got %d log messages after its call returned (all: %+v), want the two the upstream sent it within 30s", after, got.A.Logs)
	}
	for _, l := range got.B.Logs {
		t.Errorf("client B got a log message of client A's session: %+v", l)
	}
	for _, e := range append(got.A.Errors, got.B.Errors...) {
		t.Errorf("the client's onerror: %s", e)
	}
}

// TestNPMOwnSessionResource runs the official TypeScript SDK client
// (testdata/npm-session38.mjs) against reach in front of the real
// server-everything: a client that can sample, whose calls run on an
// upstream session of its own, reads the resource its tool call made for
// that session (gzip-file-as-resource links to it): it was answered that
// the resource did not exist, since reach read it on the session it shares
// with other clients. Another such client still cannot read it.
func TestNPMOwnSessionResource(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	cache := npmCache(t)
	everything := startEverything(t, cache)
	base := serveNPM(t, `upstreams:
  - name: everything
    url: `+everything+`
`)
	var got struct {
		EchoB, Gzip, ReadA, ReadB map[string]any
		URI                       string
	}
	runNodeClient(t, cache, "npm-session38.mjs", "reach-npm-session38", base, "", &got)
	if got.URI == "" || got.Gzip["isError"] == true {
		t.Fatalf("everything__gzip-file-as-resource = %v, want a resource link", got.Gzip)
	}
	// "hello from a", gzipped, is a blob; its text is not in it.
	if blob, _ := path(got.ReadA, "contents", 0, "blob").(string); blob == "" || path(got.ReadA, "contents", 0, "uri") != got.URI {
		t.Errorf("client A reading %s = %v, want the gzip it made", got.URI, got.ReadA)
	}
	if got.EchoB["isError"] == true {
		t.Fatalf("client B's everything__echo = %v", got.EchoB)
	}
	if got.ReadB["thrown"] == nil {
		t.Errorf("client B read client A's session resource %s: %v", got.URI, got.ReadB)
	}

	// Under the policies, the read on the client's own session is asked of
	// them as any read is: a forbid of the resource refuses it, with its
	// reason.
	url, key := policyGateway(t, "everything", `
@id("calls")
permit (principal, action == Reach::Action::"call", resource)
when { principal.authenticated };

@id("everything")
permit (principal, action == Reach::Action::"read_resource", resource in Reach::Upstream::"everything")
when { principal.authenticated };

@id("not-made")
@reason("what a tool made is not for agents to read")
forbid (principal, action, resource == Reach::Resource::"demo://resource/session/session38.gz");
`, everything)
	got.ReadA = nil
	runNodeClient(t, cache, "npm-session38.mjs", "reach-npm-session38", url, key, &got)
	if got.URI == "" {
		t.Fatalf("under the policies, everything__gzip-file-as-resource = %v, want a resource link", got.Gzip)
	}
	if thrown, _ := got.ReadA["thrown"].(string); !strings.Contains(thrown, "what a tool made is not for agents to read") || got.ReadA["code"] != float64(-32010) {
		t.Errorf("under a forbid, client A reading %s = %v, want refused (-32010) with the forbid's reason", got.URI, got.ReadA)
	}
}

// TestFilesystemClientRootsNotPassed: a client's roots never reach an
// upstream through reach. The real server-filesystem takes a client's
// roots, when the client declares them, in place of the folders on its
// command line: connected directly, a client with the root / is allowed
// the whole disk. Through reach the same client is allowed the folder the
// configuration gives the server, and nothing more: reach declares no roots
// to its upstreams, so what a server may reach stays the operator's.
func TestFilesystemClientRootsNotPassed(t *testing.T) {
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
	withRoot := func() *mcp.Client {
		c := mcp.NewClient(&mcp.Implementation{Name: "roots", Version: "1"}, nil)
		c.AddRoots(&mcp.Root{URI: "file:///", Name: "the whole disk"})
		return c
	}
	allowed := func(t *testing.T, cs *mcp.ClientSession, tool string) string {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		return text
	}

	// Directly: the premise, that the server would take the root.
	dcs, err := withRoot().Connect(t.Context(), &mcp.CommandTransport{Command: exec.Command("node", fsServer, sandbox)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// server-filesystem asks for the roots once the session is
	// initialized, and takes them a moment later: ask until it has.
	var direct string
	for range 100 {
		if direct = allowed(t, dcs, "list_allowed_directories"); !strings.Contains(direct, sandbox) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	dcs.Close()
	if strings.Contains(direct, sandbox) {
		t.Skipf("server-filesystem connected directly kept %q with the client's root /: this release does not take a client's roots, so there is nothing to show", direct)
	}

	cfg, err := config.Parse([]byte(fmt.Sprintf("upstreams:\n  - name: fs\n    command: [node, %s, %s]\n", fsServer, sandbox)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	c := withRoot()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.MCPServer().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := c.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	// reach's session with the server began when the gateway did: the
	// server asked it for roots then, if it declared any.
	through := allowed(t, cs, "fs__list_allowed_directories")
	if !strings.Contains(through, sandbox) {
		t.Errorf("through reach, with the client's root /, server-filesystem allows %q; want the configured folder %s alone (directly it allowed %q)", through, sandbox, direct)
	}
}

// TestSessionlessClientAskedWhy runs the MCP TypeScript client of the
// sessionless protocol (testdata/frameworks/sessionless-ask38.mjs), which
// negotiates 2026-07-28 with reach and declares sampling and elicitation,
// against reach in front of the real server-everything: its tools that ask
// the client for a completion or a form fail, since reach relays such
// requests only over a session, and the failure says so and what to do
// instead. It said the client did not accept them, which its capabilities
// belied.
func TestSessionlessClientAskedWhy(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@modelcontextprotocol/client")
	cache := npmCache(t)
	everything := startEverything(t, cache)
	base := serveNPM(t, `upstreams:
  - name: everything
    url: `+everything+`
`)
	src, err := os.ReadFile("testdata/frameworks/sessionless-ask38.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "reach-sessionless-ask38", src)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, script, base+"/mcp").CombinedOutput()
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("node client printed %s", out)
	}
	if got["error"] != nil || got["protocol"] != mcpwire.StatelessProtocol {
		t.Fatalf("the client: protocol %v, error %v; want %s", got["protocol"], got["error"], mcpwire.StatelessProtocol)
	}
	for _, key := range []string{"sampling", "elicit"} {
		text, _ := path(got[key], "content", 0, "text").(string)
		if path(got[key], "isError") != true || !strings.Contains(text, "sessionless protocol") || !strings.Contains(text, "connect the client with a session") {
			t.Errorf("%s = %v, want an error that names the sessionless protocol and says to connect with a session", key, got[key])
		}
	}
}

// TestNPMElicitationAnswerAsGiven runs the official TypeScript SDK client
// (testdata/npm-elicit38.mjs) against reach in front of the real
// server-everything, over Streamable HTTP and over stdio: the client
// answers the form of trigger-elicitation-request with two of its fields,
// and server-everything, which echoes the answer it got, gets those two
// and nothing more. reach filled in the defaults of the fields the user
// left unanswered (the Go SDK's Elicit does, on both sides of the relay):
// the upstream got choices the user never made, and could not tell them
// from the user's.
func TestNPMElicitationAnswerAsGiven(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	cache := npmCache(t)
	index := filepath.Join(cache, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	for _, c := range []struct{ name, upstream string }{
		{"http", "url: " + startEverything(t, cache)},
		{"stdio", fmt.Sprintf("command: [node, %s, stdio]", index)},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := serveNPM(t, "upstreams:\n  - name: everything\n    "+c.upstream+"\n")
			var got struct {
				Answered, Got map[string]any
				Defaults      []string
				Result        map[string]any
				Thrown        string
			}
			runNodeClient(t, cache, "npm-elicit38.mjs", "reach-npm-elicit38", base, "", &got)
			if got.Thrown != "" || got.Result["isError"] == true || got.Got == nil {
				t.Fatalf("everything__trigger-elicitation-request: thrown %q, result %v", got.Thrown, got.Result)
			}
			if len(got.Defaults) == 0 {
				t.Fatalf("the form has no field with a default: nothing to show")
			}
			if !reflect.DeepEqual(got.Got, got.Answered) {
				t.Errorf("server-everything got the answer %v; the client answered %v (the form's fields with defaults: %v)", got.Got, got.Answered, got.Defaults)
			}
		})
	}
}

// TestNPMToolsListChangedOnlyOnChange runs the official TypeScript SDK
// client (testdata/npm-listchanged38.mjs) against reach in front of the
// real server-everything: while three clients that can sample connect and
// call a tool one after another, each on an upstream session of its own on
// which server-everything says its tool list changed, a client connected
// all along is told of no change, since reach's list of the upstream's
// tools stays the same. reach told every client its list had changed each
// time it listed an upstream's tools again, changed or not: as many
// notifications, and tools/list calls after them, as clients, for every
// client that connected.
func TestNPMToolsListChangedOnlyOnChange(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	cache := npmCache(t)
	everything := startEverything(t, cache)
	base := serveNPM(t, `upstreams:
  - name: everything
    url: `+everything+`
`)
	var got struct {
		Changed       int
		Before, After []string
		Echo2         map[string]any
	}
	runNodeClient(t, cache, "npm-listchanged38.mjs", "reach-npm-listchanged38", base, "", &got)
	if got.Echo2["isError"] == true || len(got.Before) == 0 {
		t.Fatalf("the clients: tools %v, the last echo %v", got.Before, got.Echo2)
	}
	if !reflect.DeepEqual(got.Before, got.After) {
		t.Fatalf("the tools changed meanwhile (%v, then %v): nothing to show", got.Before, got.After)
	}
	if got.Changed != 0 {
		t.Errorf("the client connected all along was told %d times that the tool list changed; it did not", got.Changed)
	}
}
