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
