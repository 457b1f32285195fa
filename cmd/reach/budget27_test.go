package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// budget27Call makes the tool call callID of request through base's
// POST /v1/calls, naming the configured budget if budget is not "" (the
// Reach-Budget header, as a framework sends it with every call).
func budget27Call(t *testing.T, base, request, callID, budget string) map[string]any {
	t.Helper()
	body := fmt.Sprintf(`{"request_id":%q,"tool_calls":[{"call_id":%q,"tool":"up__count","arguments":{"key":%q}}]}`, request, callID, request+"-"+callID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/calls", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if budget != "" {
		req.Header.Set("Reach-Budget", budget)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s/v1/calls: %v", base, err)
	}
	defer resp.Body.Close()
	var out struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Results) == 0 {
		t.Fatalf("%s in %s: status %d, %v, no result", callID, request, resp.StatusCode, err)
	}
	return out.Results[0]
}

// budget27Spent asserts that r is refused by a spent tool-call budget
// that the request's earlier runs counted in.
func budget27Spent(t *testing.T, what string, r map[string]any) {
	t.Helper()
	e, _ := r["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if r["status"] == "success" || errCode(r) != "budget_tool_calls" || !strings.Contains(msg, "earlier runs") {
		t.Fatalf("%s: %v; want refused budget_tool_calls, its earlier runs counted", what, r)
	}
}

// TestBudget27NamedAgainAfterRestartKeepsBudget: a request a client names
// spends its tool-call budget, `reach serve` restarts gracefully (the
// request is stored ended), the client names the request again: its call
// is refused by the budget its first run spent, with what to do; a new
// request id has a budget of its own. Before, the restart gave the
// request a fresh budget.
func TestBudget27NamedAgainAfterRestartKeepsBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts reach serve: skipped in -short mode")
	}
	_, upURL := sharedUpstream(t)
	addr, data := freeAddr(t), t.TempDir()
	base := "http://" + addr
	cfg := writeConfig(t, fmt.Sprintf("upstreams:\n  - {name: up, url: '%s'}\nbudgets:\n  default: {tool_calls: 2, wall: 1h}\n", upURL))
	cmd := startReach(t, cfg, addr, data)
	for _, c := range []string{"c1", "c2"} {
		if r := budget27Call(t, base, "r-spent", c, ""); r["status"] != "success" {
			t.Fatalf("%s: %v", c, r)
		}
	}
	if r := budget27Call(t, base, "r-spent", "c3", ""); errCode(r) != "budget_tool_calls" {
		t.Fatalf("the third call of 2: %v; want refused budget_tool_calls", r)
	}
	stopServe(t, cmd, syscall.SIGTERM)

	cmd = startReach(t, cfg, addr, data)
	defer stopServe(t, cmd, syscall.SIGTERM)
	budget27Spent(t, "r-spent named again after the restart", budget27Call(t, base, "r-spent", "c4", ""))
	if got := getJSONTB(t, base+"/v1/requests/r-spent"); fmt.Sprint(got["tool_calls"]) != "2" {
		t.Errorf("GET /v1/requests/r-spent shows %v tool calls; want the 2 of its first run", got["tool_calls"])
	}
	if r := budget27Call(t, base, "r-new", "n1", ""); r["status"] != "success" {
		t.Errorf("a new request id after the restart: %v; want its call run", r)
	}
}

// TestBudget27NamedAgainOnPostgres: on two instances over one PostgreSQL,
// a request spends its tool-call budget through a; both restart
// gracefully (the request is stored ended); the client names it again
// through b: its call is refused, what it spent read back from the shared
// store. Before, the request began again on b with a fresh budget.
func TestBudget27NamedAgainOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleetWith(t, "  small: {tool_calls: 2, wall: 1h}\n")
	for _, c := range []string{"c1", "c2"} {
		if r := budget27Call(t, f.base(0), "r-spent", c, "small"); r["status"] != "success" {
			t.Fatalf("%s through a: %v", c, r)
		}
	}
	f.stop(0)
	f.stop(1)
	if state, ended := f.awaitEnded("r-spent", 30*time.Second, nil); !ended || state != "ended" {
		t.Fatalf("r-spent after the graceful stops: %s, ended %v; want ended", state, ended)
	}
	f.start(0)
	f.start(1)
	budget27Spent(t, "r-spent named again through b", budget27Call(t, f.base(1), "r-spent", "c3", "small"))
	if r := budget27Call(t, f.base(0), "r-spent", "c4", "small"); r["status"] == "success" {
		t.Fatalf("r-spent through a, begun again on b: %v; want refused", r)
	}
}

// TestBudget27MCPClientNamedAgainAfterRestart: the Go MCP SDK's client
// names its conversation's request in each call's _meta ("reach/request"),
// spends its tool-call budget, and `reach serve` restarts gracefully; a
// new session of the client names the request again: the call is refused
// (isError, the budget's text saying its earlier runs counted and to begin
// a new request), and the same call without the id runs in a new request.
// Before, the request named again after the restart had a fresh budget.
func TestBudget27MCPClientNamedAgainAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts reach serve: skipped in -short mode")
	}
	c := &counter{runs: map[string]int{}}
	cfg := writeConfig(t, "upstreams:\n  - {name: shop, url: '"+shopUpstream(t, c)+"'}\ntools:\n  shop__search: {access: read}\n"+
		"budgets:\n  default: {tool_calls: 2, wall: 1h}\n")
	data, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	call := func(cs *mcp.ClientSession, id string, meta mcp.Meta) (*mcp.CallToolResult, string) {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "shop__search", Arguments: map[string]any{"id": id}, Meta: meta})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		text, _ := json.Marshal(res)
		return res, string(text)
	}
	conv := mcp.Meta{"reach/request": "conv-27"}
	cmd := startReach(t, cfg, addr, data)
	cs := goSession(t, base)
	for _, id := range []string{"a", "b"} {
		if res, text := call(cs, id, conv); res.IsError {
			t.Fatalf("call %s: %s", id, text)
		}
	}
	cs.Close()
	stopServe(t, cmd, syscall.SIGTERM)

	cmd = startReach(t, cfg, addr, data)
	defer stopServe(t, cmd, syscall.SIGTERM)
	cs = goSession(t, base)
	res, text := call(cs, "c", conv)
	if !res.IsError || !strings.Contains(text, "budget") || !strings.Contains(text, "earlier runs") || !strings.Contains(text, "new request") {
		t.Fatalf("the request named again after the restart: %s; want refused by its spent budget, saying to begin a new request", text)
	}
	if res, text := call(cs, "d", nil); res.IsError {
		t.Errorf("the call in a new request: %s; want it run", text)
	}
}
