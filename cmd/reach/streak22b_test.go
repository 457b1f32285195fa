package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// streakTS runs testdata/streak-refusals.mjs (the TypeScript SDK's client)
// against urls, in request: allowed calls within the request's tool_calls
// budget, then calls-allowed more, and returns what each call got.
func streakTS(t *testing.T, dir, node, request string, allowed, calls int, urls ...string) []tsResult {
	t.Helper()
	src, err := os.ReadFile("testdata/streak-refusals.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, fmt.Sprintf("reach-streak-%d.mjs", os.Getpid())) // beside node_modules, so that its imports resolve
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(script) })
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args := append([]string{script, request, fmt.Sprint(allowed), fmt.Sprint(calls)}, urls...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the client: %v: %s", err, out)
	}
	var got []tsResult
	if err := json.Unmarshal(out, &got); err != nil || len(got) != calls {
		t.Fatalf("the client printed %s (%v), want %d results", out, err, calls)
	}
	return got
}

type tsResult struct {
	IsError bool
	Text    string
	Status  string
	Thrown  string
}

// checkStreakTS checks what the TypeScript client got: allowed calls
// answered, then refusals of which the eighth, and only it, says in its
// text (all a model that reads only the MCP result gets) that the request
// is stopped.
func checkStreakTS(t *testing.T, got []tsResult, allowed int) {
	t.Helper()
	for n, r := range got {
		switch {
		case r.Thrown != "":
			t.Errorf("call %d threw: %s", n, r.Thrown)
		case n < allowed:
			if r.IsError || r.Status != "success" {
				t.Errorf("call %d within the budget: %+v", n, r)
			}
		default:
			refusal := n - allowed + 1
			if !r.IsError || r.Status != "refused" {
				t.Errorf("refusal %d: %+v, want refused with isError", refusal, r)
			}
			if has := strings.Contains(r.Text, streak22Text); has != (refusal == 8) {
				t.Errorf("refusal %d's text says the request is stopped: %v, want %v: %q", refusal, has, refusal == 8, r.Text)
			}
		}
	}
}

// TestStreak22bTypeScriptOne: through the TypeScript SDK's client on one
// reach serve, the eighth refusal in a row's MCP result text carries the
// stop's note.
func TestStreak22bTypeScriptOne(t *testing.T) {
	dir, node := nodeSDK(t)
	_, upURL := sharedUpstream(t)
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf("upstreams:\n  - {name: up, url: '%s'}\n", upURL))
	cmd := startReach(t, cfg, addr, t.TempDir())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	checkStreakTS(t, streakTS(t, dir, node, "r-ts-one", 3, 11, "http://"+addr+"/mcp"), 3)
}

// TestStreak22bTypeScriptFleet: the same through two TypeScript clients,
// one on each of two reach serve on one PostgreSQL, the calls alternating:
// the eighth refusal, counted on the shared count, says the request is
// stopped in its MCP result text.
func TestStreak22bTypeScriptFleet(t *testing.T) {
	dir, node := nodeSDK(t)
	f := newFleet(t)
	checkStreakTS(t, streakTS(t, dir, node, "r-ts-fleet", 4, 12, f.base(0)+"/mcp", f.base(1)+"/mcp"), 4)
}
