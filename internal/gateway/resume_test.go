package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// raw sends one request and returns its status and up to 4 KiB of its
// body, read for at most a second (an SSE stream stays open).
func raw(t *testing.T, method, url, body string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := make([]byte, 4096)
	n, _ := io.ReadAtLeast(resp.Body, b, 1)
	return resp.StatusCode, resp.Header, string(b[:n])
}

// Another principal cannot resume a stream that is not theirs: not an
// A2A task's events (SubscribeToTask, 1.0, or tasks/resubscribe, 0.3),
// not an MCP session's stream by its id and a Last-Event-ID. And no one
// replays an MCP stream: reach keeps no events (the SDK's handler has no
// event store), so a call's answer, a stopped request's too, is read once.
func TestResumeIsTheOwnersOnly(t *testing.T) {
	_, url, _, keys := authGateway(t, "agents:\n  - {name: executor, url: http://127.0.0.1:1}\n")
	a2aHeader := func(who, version string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + keys[who], "A2A-Version": version, "Content-Type": "application/json",
			"Accept": "application/json, text/event-stream"}
	}
	_, out := do(t, "POST", url+"/a2a/executor", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}}`,
		a2aHeader("alice", "1.0"))
	id, _ := path(out, "result", "task", "id").(string)
	if id == "" {
		t.Fatalf("alice's send: %v", out)
	}
	for _, c := range []struct{ version, method, params string }{
		{"1.0", "SubscribeToTask", fmt.Sprintf(`{"id":%q}`, id)},
		{"0.3", "tasks/resubscribe", fmt.Sprintf(`{"id":%q}`, id)},
	} {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":%q,"params":%s}`, c.method, c.params)
		if _, _, s := raw(t, "POST", url+"/a2a/executor", body, a2aHeader("alice", c.version)); !strings.Contains(s, id) {
			t.Errorf("alice's %s of her task: %q", c.method, s)
		}
		_, _, s := raw(t, "POST", url+"/a2a/executor", body, a2aHeader("bob", c.version))
		if strings.Contains(s, "TASK_STATE") || !strings.Contains(s, `"code":-32001`) {
			t.Errorf("bob's %s of alice's task: %q", c.method, s)
		}
	}

	mcpHeader := func(who, sid string) map[string]string {
		h := map[string]string{"Authorization": "Bearer " + keys[who], "Content-Type": "application/json",
			"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-06-18"}
		if sid != "" {
			h["Mcp-Session-Id"] = sid
		}
		return h
	}
	code, h, s := raw(t, "POST", url+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`,
		mcpHeader("alice", ""))
	sid := h.Get("Mcp-Session-Id")
	if code != 200 || sid == "" {
		t.Fatalf("alice's initialize: %d %q", code, s)
	}
	raw(t, "POST", url+"/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, mcpHeader("alice", sid))
	if code, _, s := raw(t, "POST", url+"/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"refund_order","arguments":{"order_id":"1001"}}}`,
		mcpHeader("alice", sid)); code != 200 || !strings.Contains(s, `"result"`) {
		t.Fatalf("alice's call: %d %q", code, s)
	}
	for _, last := range []string{"", "0", "0_0", "1_0"} {
		hb := mcpHeader("bob", sid)
		if last != "" {
			hb["Last-Event-ID"] = last
		}
		code, _, s := raw(t, "GET", url+"/mcp", "", hb)
		if code != http.StatusForbidden || !strings.Contains(s, "not_your_session") {
			t.Errorf("bob's GET of alice's session (Last-Event-ID %q): %d %q", last, code, s)
		}
		ha := mcpHeader("alice", sid)
		if last != "" {
			ha["Last-Event-ID"] = last
		}
		// Reach keeps no events to replay: her own stream resumed from an
		// id is refused rather than replayed.
		if code, _, s := raw(t, "GET", url+"/mcp", "", ha); (last == "") != (code == 200) || strings.Contains(s, `"result"`) {
			t.Errorf("alice's GET of her session (Last-Event-ID %q): %d %q", last, code, s)
		}
	}
}
