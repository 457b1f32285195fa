package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionsConfig serves the shop upstream's search.
func sessionsConfig(t *testing.T) string {
	c := &counter{runs: map[string]int{}}
	return writeConfig(t, "upstreams:\n  - {name: shop, url: '"+shopUpstream(t, c)+"'}\ntools:\n  shop__search: {access: read}\n")
}

// goSession opens an MCP session on reach at base with the Go SDK's
// client, on a protocol of sessions (the client would try the sessionless
// one first).
func goSession(t *testing.T, base string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-agent", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	if cs.ID() == "" {
		t.Fatal("the client has no session id")
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// search calls shop__search on cs and returns what went wrong, if anything.
func search(t *testing.T, cs *mcp.ClientSession, id string) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "shop__search", Arguments: map[string]any{"id": id}})
	if err != nil {
		return err.Error()
	}
	if res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, id) {
		b, _ := json.Marshal(res)
		return string(b)
	}
	return ""
}

// postOn posts a tools/call on session sid to reach at base and returns
// the status.
func postOn(t *testing.T, base, sid string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"shop__search","arguments":{"id":"z"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcpwire.HeaderSession, sid)
	req.Header.Set(mcpwire.HeaderProtocol, mcpwire.SessionProtocol)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSessionAcrossRestart: a Go SDK client's MCP session goes on, under
// the same id, after reach serve is killed (kill -9) and started again on
// the same data; a session its client deleted before does not come back.
func TestSessionAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restart test skipped in -short mode")
	}
	cfg, data, addr := sessionsConfig(t), t.TempDir(), freeAddr(t)
	base := "http://" + addr
	cmd := startReach(t, cfg, addr, data)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	cs := goSession(t, base)
	if e := search(t, cs, "before"); e != "" {
		t.Fatal(e)
	}
	gone := goSession(t, base)
	goneID := gone.ID()
	gone.Close() // DELETE

	cmd.Process.Kill()
	cmd.Wait()
	cmd = startReach(t, cfg, addr, data)
	if e := search(t, cs, "after"); e != "" {
		t.Fatalf("the session after the restart: %s", e)
	}
	if e := search(t, cs, "again"); e != "" {
		t.Fatalf("the session's second call after the restart: %s", e)
	}
	if code := postOn(t, base, goneID); code != http.StatusNotFound {
		t.Errorf("a call on the session deleted before the restart = %d, want 404", code)
	}
}

// TestTypeScriptSessionAcrossRestart: the TypeScript SDK 1.x's Streamable
// HTTP client, which never initializes again on a 404, goes on with its
// session after reach serve restarts.
func TestTypeScriptSessionAcrossRestart(t *testing.T) {
	dir, node := nodeSDK(t)
	src, err := os.ReadFile("testdata/session-restart.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := nodeScript(t, dir, "reach-session-restart", src) // beside node_modules, so that its imports resolve
	cfg, data, addr := sessionsConfig(t), t.TempDir(), freeAddr(t)
	cmd := startReach(t, cfg, addr, data)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	client := exec.CommandContext(ctx, node, script, "http://"+addr+"/mcp")
	stdin, _ := client.StdinPipe()
	stdout, _ := client.StdoutPipe()
	client.Stderr = os.Stderr
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Process.Kill(); client.Wait() })
	lines := bufio.NewScanner(stdout)
	var ready struct {
		Ready   bool
		Session string
	}
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &ready) != nil || !ready.Ready {
		t.Fatalf("the client did not open its session: %s", lines.Text())
	}

	cmd.Process.Kill()
	cmd.Wait()
	cmd = startReach(t, cfg, addr, data)
	stdin.Write([]byte("go\n"))
	if !lines.Scan() {
		t.Fatal("the client printed nothing after the restart")
	}
	var got struct {
		Before, After, Again struct {
			IsError bool
			Text    string
			Thrown  string
		}
		Session, Error string
	}
	if err := json.Unmarshal(lines.Bytes(), &got); err != nil || got.Error != "" {
		t.Fatalf("the client: %s", lines.Bytes())
	}
	for what, r := range map[string]struct {
		IsError bool
		Text    string
		Thrown  string
	}{"before the restart": got.Before, "after it": got.After, "again after it": got.Again} {
		if r.Thrown != "" || r.IsError || !strings.Contains(r.Text, "search") {
			t.Errorf("the call %s = %+v", what, r)
		}
	}
	if got.Session != ready.Session {
		t.Errorf("the session id went from %s to %s", ready.Session, got.Session)
	}
}

// nodeScript writes src into folder dir under a name of this test's own
// (name-*.mjs), removed when the test ends, and returns its path: the
// folder is shared by every checkout whose tests use the same
// REACH_FRAMEWORKS_CACHE, and a script under a fixed name could be another
// checkout's version by the time it runs.
func nodeScript(t *testing.T, dir, name string, src []byte) string {
	t.Helper()
	f, err := os.CreateTemp(dir, name+"-*.mjs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := f.Write(src); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// nodeSDK finds the folder scripts/frameworks-deps.sh installs into, with
// the TypeScript SDK 1.x, and the Node 22 in it; without them the test
// skips, saying why, or fails under REACH_CI (make test).
func nodeSDK(t *testing.T) (dir, node string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts node processes")
	}
	dir = os.Getenv("REACH_FRAMEWORKS_CACHE")
	if dir == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".cache", "frameworks")
	}
	node = filepath.Join(dir, "node_modules", "node", "bin", "node")
	for _, p := range []string{filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json"), node} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("REACH_CI") != "" {
				t.Fatalf("%s is missing: run scripts/frameworks-deps.sh (make test does)", p)
			}
			t.Skipf("%s is missing: run scripts/frameworks-deps.sh (make test does)", p)
		}
	}
	return dir, node
}

// TestInstancesShareSession: on one PostgreSQL store, a session opened on
// instance a is taken over by instance b when its client's request comes
// to b (no affinity), under the same id, and a killed a does not take it
// with it; once its client deleted it, no instance takes it over again.
func TestInstancesShareSession(t *testing.T) {
	if testing.Short() {
		t.Skip("instances test skipped in -short mode")
	}
	f := newFleet(t)
	cs := goSession(t, f.base(0))
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "up__count", Arguments: map[string]any{"key": "on-a"}})
	if err != nil || res.IsError {
		t.Fatalf("a call on a: %v %+v", err, res)
	}
	callOn := func(i int, method string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, f.base(i)+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"up__count","arguments":{"key":"on-b"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcpwire.HeaderSession, cs.ID())
		req.Header.Set(mcpwire.HeaderProtocol, mcpwire.SessionProtocol)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := callOn(1, http.MethodPost); code != http.StatusOK || !strings.Contains(body, `"result"`) || strings.Contains(body, `"isError":true`) {
		t.Fatalf("the session's call on b = %d %s", code, body)
	}
	f.kill(0)
	if code, body := callOn(1, http.MethodPost); code != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Fatalf("the session's call on b once a died = %d %s", code, body)
	}
	if code, _ := callOn(1, http.MethodDelete); code != http.StatusNoContent {
		t.Fatalf("DELETE of the session on b = %d", code)
	}
	f.start(0)
	if code, body := callOn(0, http.MethodPost); code != http.StatusNotFound {
		t.Errorf("the deleted session's call on a = %d %s; want 404", code, body)
	}
}

// TestInstancesEndSessionEverywhere: on one PostgreSQL store, a session
// that both instances hold in memory (opened on a, taken over by b) and
// that its client ends with a DELETE on one of them is ended on the other
// too: a request there, once the DELETE was answered, soon gets the 404
// of an ended session, not an answer until its idle gap (a client that
// ended its session, or one whose id leaked, is not served on). Both
// ways: the DELETE on the instance that took it over, and on the one
// that opened it, through the Go SDK's Close.
func TestInstancesEndSessionEverywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("instances test skipped in -short mode")
	}
	f := newFleet(t)
	on := func(i int, method, sid string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, f.base(i)+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"up__count","arguments":{"key":"k"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcpwire.HeaderSession, sid)
		req.Header.Set(mcpwire.HeaderProtocol, mcpwire.SessionProtocol)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// held opens a session on a and has b take it over: both hold it.
	held := func() *mcp.ClientSession {
		cs := goSession(t, f.base(0))
		for i := range 2 {
			if code, body := on(i, http.MethodPost, cs.ID()); code != http.StatusOK || !strings.Contains(body, `"result"`) {
				t.Fatalf("the session's call on instance %d = %d %s", i, code, body)
			}
		}
		return cs
	}
	// endsOn polls instance i with the session's calls until one is
	// answered 404, and fails with what it saw if none is by the deadline.
	endsOn := func(i int, sid string) {
		t.Helper()
		seen, last := map[int]int{}, ""
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			code, body := on(i, http.MethodPost, sid)
			if code == http.StatusNotFound {
				if code, body := on(i, http.MethodPost, sid); code != http.StatusNotFound {
					t.Fatalf("the ended session's call on instance %d = %d %s after a 404", i, code, body)
				}
				return
			}
			seen[code]++
			last = fmt.Sprint(code, " ", body)
		}
		t.Fatalf("the session deleted elsewhere is still served on instance %d: statuses %v, the last %s", i, seen, last)
	}

	cs := held()
	if code, _ := on(1, http.MethodDelete, cs.ID()); code != http.StatusNoContent {
		t.Fatalf("DELETE of the session on b = %d", code)
	}
	endsOn(0, cs.ID())

	cs = held()
	sid := cs.ID()
	if err := cs.Close(); err != nil { // its DELETE, on a
		t.Fatal(err)
	}
	endsOn(1, sid)
}

// TestSessionTakenOverBeginsNewRequest: a session taken over after a kill
// -9 and restart does not go on with the request its calls ran in,
// although only the restart interrupted it (docs/STATE.md says why): its
// next call runs in a new request, the old one stays interrupted, and a
// call of the session that names it is refused request_interrupted, as
// any call naming it is.
func TestSessionTakenOverBeginsNewRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("restart test skipped in -short mode")
	}
	cfg, data, addr := sessionsConfig(t), t.TempDir(), freeAddr(t)
	base := "http://" + addr
	cmd := startReach(t, cfg, addr, data)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	cs := goSession(t, base)
	call := func(meta mcp.Meta) (*mcp.CallToolResult, string) {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "shop__search", Arguments: map[string]any{"id": "x"}, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		id, _ := res.Meta["reach/request"].(string)
		return res, id
	}
	if res, _ := call(nil); res.IsError {
		t.Fatalf("the session's call: %+v", res)
	}
	_, before := call(nil)
	// The session's record is queued at its initialize (docs/STATE.md): a
	// kill in the moment before its batch commits loses it, and the
	// client then gets the 404 it got before records. Another session's
	// DELETE is durable before its answer, and commits what was queued
	// before it, the record included.
	gone := goSession(t, base)
	gone.Close()
	cmd.Process.Kill()
	cmd.Wait()
	cmd = startReach(t, cfg, addr, data)

	res, after := call(nil)
	if res.IsError || after == "" || after == before {
		t.Fatalf("the session's call after the restart ran in request %q (before: %q): %+v; want a new one", after, before, res)
	}
	resp, err := http.Get(base + "/v1/requests/" + before)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var old struct{ State string }
	if json.Unmarshal(b, &old); old.State != "interrupted" {
		t.Errorf("the session's request before the restart = %d %s; want it interrupted", resp.StatusCode, b)
	}
	res, _ = call(mcp.Meta{"reach/request": before})
	if text, _ := json.Marshal(res); !res.IsError || !strings.Contains(string(text), "request_interrupted") {
		t.Errorf("the session's call naming its interrupted request = %s; want refused request_interrupted", text)
	}
}

// TestTypeScriptSSEPerPrincipal: the TypeScript SDK 1.x's
// SSEClientTransport, one client past sessions_per_principal, is refused
// at its connect with the 429 (its error names the status), while the
// clients within the bound go on; once one closes, a new one connects.
func TestTypeScriptSSEPerPrincipal(t *testing.T) {
	dir, node := nodeSDK(t)
	src, err := os.ReadFile("testdata/sse-cap.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := nodeScript(t, dir, "reach-sse-cap", src) // beside node_modules, so that its imports resolve
	c := &counter{runs: map[string]int{}}
	cfg := writeConfig(t, "sessions_per_principal: 2\nupstreams:\n  - {name: shop, url: '"+shopUpstream(t, c)+"'}\ntools:\n  shop__search: {access: read}\n")
	data, addr := t.TempDir(), freeAddr(t)
	cmd := startReach(t, cfg, addr, data)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, script, "http://"+addr+"/sse", "2").Output()
	if err != nil {
		t.Fatalf("sse-cap: %v\n%s", err, out)
	}
	type got struct {
		IsError bool
		Text    string
		Thrown  string
		Code    any
	}
	var res struct {
		Clients []got
		Again   got
		Error   string
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Error != "" || len(res.Clients) != 3 {
		t.Fatalf("sse-cap printed %s", out)
	}
	for i, g := range res.Clients[:2] {
		if g.Thrown != "" || g.IsError || !strings.Contains(g.Text, "search") {
			t.Errorf("client %d within the bound = %+v", i, g)
		}
	}
	if g := res.Clients[2]; !strings.Contains(g.Thrown, "429") {
		t.Errorf("the client past the bound = %+v; want its connect refused with the 429", g)
	}
	if g := res.Again; g.Thrown != "" || g.IsError {
		t.Errorf("a client once one closed = %+v; want it connected", g)
	}
}

// TestPostgresSessionInUseOutlivesIdleGap: on PostgreSQL, where the sweep
// of the records idle past idle_gap ends their sessions on every
// instance, this one too, a session in use is not taken for an idle one
// whatever path answers its calls: the Go SDK's client that can sample
// (its calls answered through the SDK, as streams) calls through three
// times the gap, every call answered. It was ended a gap after its
// initialize, its next call answered 404.
func TestPostgresSessionInUseOutlivesIdleGap(t *testing.T) {
	if testing.Short() {
		t.Skip("PostgreSQL test skipped in -short mode")
	}
	url, err := pgtest.Own(t).CreateDatabase(t.Context(), "reach")
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{runs: map[string]int{}}
	cfg := writeConfig(t, fmt.Sprintf("store: %s\ninstance: a\nidle_gap: 2s\nupstreams:\n  - {name: shop, url: '%s'}\ntools:\n  shop__search: {access: read}\n",
		url, shopUpstream(t, c)))
	addr := freeAddr(t)
	cmd := startReach(t, cfg, addr, t.TempDir())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sampler := mcp.NewClient(&mcp.Implementation{Name: "sampler", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, fmt.Errorf("no model here")
		}})
	cs, err := sampler.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	start := time.Now()
	for i := 0; time.Since(start) < 6*time.Second; i++ {
		if msg := search(t, cs, fmt.Sprint("item-", i)); msg != "" {
			t.Fatalf("call %d, %s into the session: %s", i, time.Since(start).Round(time.Millisecond), msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
