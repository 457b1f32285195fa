package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// streak22Text is the stop's reason at the eighth refusal in a row.
const streak22Text = "the agent was refused 8 times in a row and went on calling"

// TestStreak22FleetAlternating: an agent whose calls alternate between two
// instances on one PostgreSQL, and that goes on calling once its request's
// shared budget of tool calls is spent, is stopped at its eighth refusal
// (before, each instance counted its own: 16): the eight are refused for
// the budget, and the next call, through either, is refused with the
// stop's text.
func TestStreak22FleetAlternating(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleet(t)
	sessions := [2]*mcp.ClientSession{f.mcp(0), f.mcp(1)}
	budget := map[string]any{"reach/budget": map[string]any{"tool_calls": 4}}
	for i := range 4 {
		if status, text, _ := callMCP(t, sessions[i%2], "r-streak", "up__count", map[string]any{"key": fmt.Sprintf("s-%d", i)}, budget); status != "success" {
			t.Fatalf("call %d on %s: %s %s", i, f.names[i%2], status, text)
		}
	}
	for n := 1; n <= 8; n++ {
		i := n % 2
		r := callHTTP(t, f.base(i), "r-streak", fmt.Sprintf("c%d", n), "up__count", fmt.Sprintf(`{"key":"r-%d"}`, n), "")
		if r["status"] != "refused" || errCode(r) != "budget_tool_calls" {
			t.Fatalf("refusal %d on %s: %v", n, f.names[i], r)
		}
		notes := fmt.Sprint(r["notes"])
		if has := strings.Contains(notes, streak22Text); has != (n == 8) {
			t.Fatalf("refusal %d on %s says the request is stopped: %v, want %v: %v", n, f.names[i], has, n == 8, r)
		}
	}
	// The stop reaches the other instance as every stop does (the store's
	// notification): its calls are refused with the stop's text from then.
	for i := range 2 {
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := callHTTP(t, f.base(i), "r-streak", "after", "up__count", `{"key":"after"}`, "")
			if r["status"] == "cancelled" && strings.Contains(fmt.Sprint(r["error"]), streak22Text) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the call after the stop on %s: %v; want cancelled with the stop's text", f.names[i], r)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	st, err := postgres.Open(t.Context(), f.url, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r, err := st.GetRequest(t.Context(), "r-streak"); err != nil || r.State != "stopped" || !strings.Contains(string(r.Cause), streak22Text) {
		t.Fatalf("the stored request: %+v, %v; want stopped with the streak's cause", r, err)
	}
}

// TestStreak22RestartSQLite: four refusals, a restart of `reach serve` on
// its data folder (SQLite), four more: the eighth in a row stops the
// request (before, the restart forgot the four), and the next is refused
// with the stop's text.
func TestStreak22RestartSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts reach serve: skipped in -short mode")
	}
	_, upURL := sharedUpstream(t)
	addr, data := freeAddr(t), t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf("upstreams:\n  - {name: up, url: '%s'}\ntools:\n  up__count: {access: forbidden}\n", upURL))
	cmd := startReach(t, cfg, addr, data)
	deny := func(from, to int) {
		t.Helper()
		for n := from; n <= to; n++ {
			r := callHTTP(t, "http://"+addr, "r-restart", fmt.Sprintf("c%d", n), "up__count", fmt.Sprintf(`{"key":"k%d"}`, n), "")
			if r["status"] != "refused" || errCode(r) != "denied" {
				t.Fatalf("refusal %d: %v", n, r)
			}
			notes := fmt.Sprint(r["notes"])
			if has := strings.Contains(notes, streak22Text); has != (n == 8) {
				t.Fatalf("refusal %d says the request is stopped: %v, want %v: %v", n, has, n == 8, r)
			}
		}
	}
	deny(1, 4)
	stopServe(t, cmd, syscall.SIGTERM) // the request ends with the life; the next begins it again by its id
	cmd = startReach(t, cfg, addr, data)
	deny(5, 8)
	r := callHTTP(t, "http://"+addr, "r-restart", "c9", "up__count", `{"key":"k9"}`, "")
	if r["status"] != "cancelled" || errCode(r) != "stopped_cancel" || !strings.Contains(fmt.Sprint(r["error"]), streak22Text) {
		t.Errorf("the call after the stop: %v; want refused with the stop's text", r)
	}
	if got := getJSONTB(t, "http://"+addr+"/v1/requests/r-restart"); got["state"] != "stopped_cancel" {
		t.Errorf("r-restart: %v; want stopped_cancel", got["state"])
	}
	stopServe(t, cmd, syscall.SIGTERM)
}
