package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ledger is the upstream's record of side effects, by idempotency key.
type ledger struct {
	mu     sync.Mutex
	booked map[string]int  // idempotency key -> executions
	steps  map[string]bool // "chain/step" booked
	undone map[string]int  // "chain/step" -> undos
}

// bookedOnce fails t for each idempotency key whose booking ran more than
// once. l.mu is held.
func (l *ledger) bookedOnce(t *testing.T) {
	t.Helper()
	for key, n := range l.booked {
		if n > 1 {
			t.Errorf("booking under key %s ran %d times", key, n)
		}
	}
}

func crashUpstream(t *testing.T, l *ledger) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "travel", Version: "1"}, nil)
	type step struct {
		Chain int `json:"chain"`
		Step  int `json:"step"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "book", Description: "Book one leg of a trip."},
		func(_ context.Context, req *mcp.CallToolRequest, a step) (*mcp.CallToolResult, any, error) {
			key, _ := req.Params.Meta["reach/idempotency_key"].(string)
			l.mu.Lock()
			l.booked[key]++
			l.steps[fmt.Sprintf("%d/%d", a.Chain, a.Step)] = true
			l.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(`{"ref":"R-%d-%d"}`, a.Chain, a.Step)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "unbook", Description: "Cancel one leg."},
		func(_ context.Context, req *mcp.CallToolRequest, a step) (*mcp.CallToolResult, any, error) {
			l.mu.Lock()
			l.undone[fmt.Sprintf("%d/%d", a.Chain, a.Step)]++
			l.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `"cancelled"`}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestCrashThroughServe is the crash test of issue 5 through the real
// gateway: a scripted agent runs chains of three bookings (each with an
// undo) through `reach serve` in front of an upstream that counts side
// effects; the gateway is SIGKILLed at seeded random moments and
// restarted over the same data. Afterwards: no booking ran twice for one
// idempotency key; every chain the agent finished has all three legs;
// every leg of an unfinished chain is undone exactly once, or was cut off
// mid-call; the audit chain verifies.
func TestCrashThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	l := &ledger{booked: map[string]int{}, steps: map[string]bool{}, undone: map[string]int{}}
	up := crashUpstream(t, l)
	cfg := writeConfig(t, `upstreams:
  - {name: travel, url: '`+up+`'}
tools:
  travel__book: {access: write, reentrancy: reentrant, idempotent: true, undo: {tool: travel__unbook, args: '{"chain": "{args.chain}", "step": "{args.step}"}'}}
  travel__unbook: {access: write, reentrancy: reentrant, idempotent: true}
budgets:
  default: {tool_calls: 1000, wall: 10m}
`)
	data, addr := t.TempDir(), freeAddr(t)
	rng := rand.New(rand.NewPCG(20261130, 5))
	finished := map[int]bool{}
	chain := 0
	for round := range 4 {
		cmd := startReach(t, cfg, addr, data)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { // the scripted agent
			for {
				chain++
				c := chain
				for step := 1; step <= 3; step++ {
					select {
					case <-stop:
						return
					default:
					}
					body := fmt.Sprintf(`{"request_id":"chain-%d","tool_calls":[{"call_id":"s%d","tool":"travel__book","arguments":{"chain":%d,"step":%d}}]}`, c, step, c, step)
					resp, err := http.Post("http://"+addr+"/v1/calls", "application/json", strings.NewReader(body))
					if err != nil {
						return // the gateway died
					}
					resp.Body.Close()
				}
				resp, err := http.Post("http://"+addr+"/v1/requests/chain-"+fmt.Sprint(c)+"/end", "application/json", nil)
				if err != nil {
					return
				}
				resp.Body.Close()
				if resp.StatusCode == 200 {
					finished[c] = true
				}
			}
		})
		time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		close(stop)
		wg.Wait()
		t.Logf("round %d: killed after chain %d", round, chain)
	}
	// The last restart recovers, then stops cleanly.
	cmd := startReach(t, cfg, addr, data)
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()

	l.mu.Lock()
	defer l.mu.Unlock()
	l.bookedOnce(t)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, data, &sqlite.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cutOff := map[string]bool{}
	for c := 1; c <= chain; c++ {
		// The gateway may have ended a chain whose answer the kill cut off.
		if r, err := st.GetRequest(ctx, fmt.Sprintf("chain-%d", c)); err == nil && r.State == "ended" {
			finished[c] = true
		}
		frames, _ := st.RequestFrames(ctx, fmt.Sprintf("chain-%d", c))
		for _, f := range frames {
			var a struct{ Chain, Step int }
			json.Unmarshal(f.Args, &a)
			if f.State == "cancelled" && strings.Contains(string(f.Error), "interrupted") {
				cutOff[fmt.Sprintf("%d/%d", a.Chain, a.Step)] = true
			}
		}
	}
	undone := 0
	for c := 1; c <= chain; c++ {
		for step := 1; step <= 3; step++ {
			id := fmt.Sprintf("%d/%d", c, step)
			switch {
			case finished[c]:
				if !l.steps[id] || l.undone[id] != 0 {
					t.Errorf("finished chain %d: leg %d booked %v, undone %d times", c, step, l.steps[id], l.undone[id])
				}
			case l.steps[id] && l.undone[id] != 1 && !cutOff[id]:
				t.Errorf("unfinished chain %d: leg %d booked but undone %d times (and not cut off)", c, step, l.undone[id])
			case l.undone[id] > 1:
				t.Errorf("leg %s undone %d times", id, l.undone[id])
			}
			undone += l.undone[id]
		}
	}
	rep, err := audit.Verify(ctx, st)
	if err != nil {
		t.Fatalf("audit chain: %v", err)
	}
	if undone == 0 {
		t.Log("no chain was cut mid-way in these rounds")
	}
	t.Logf("%d chains, %d finished, %d legs undone, %d cut off mid-call, %d audit events verified",
		chain, len(finished), undone, len(cutOff), rep.Events)
}
