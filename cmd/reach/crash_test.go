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
	"github.com/agentreach/reach/internal/idempotency"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolKey is the key the tool is given for a call of tool under the
// caller's own key, by the local user (no auth): one of its own
// (idempotency.ToolKey).
func toolKey(tool, key string) string {
	return idempotency.ToolKey(link.LocalPrincipal, "", tool, key)
}

// sideEffects is the travel upstream's record of what its tools did.
type sideEffects struct {
	mu       sync.Mutex
	booked   map[string]int // idempotency key -> bookings
	legs     map[string]int // "chain/step" -> bookings
	unbooked map[string]int // idempotency key -> undos that succeeded
	undone   map[string]int // "chain/step" -> undos that succeeded
	closed   map[string]int // idempotency key -> high-risk closes
	// failsUndo, if not nil, says which legs' undos always fail.
	failsUndo func(chain, step int) bool
}

func newSideEffects(failsUndo func(chain, step int) bool) *sideEffects {
	return &sideEffects{booked: map[string]int{}, legs: map[string]int{}, unbooked: map[string]int{}, undone: map[string]int{}, closed: map[string]int{},
		failsUndo: failsUndo}
}

// bookedOnce fails t for each idempotency key whose booking ran more than
// once, saying where first. s.mu is held.
func (s *sideEffects) bookedOnce(t *testing.T, where string) {
	t.Helper()
	for key, n := range s.booked {
		if n > 1 {
			t.Errorf("%sbooking under key %s ran %d times", where, key, n)
		}
	}
}

// travelConfig writes a gateway's configuration in front of the travel
// upstream at up: travel__book is a write that travel__unbook undoes, and
// more follows those two tools (more tools, budgets).
func travelConfig(t *testing.T, up, more string) string {
	return writeConfig(t, travelYAML(up, more))
}

// travelYAML is the configuration of travelConfig.
func travelYAML(up, more string) string {
	return `upstreams:
  - {name: travel, url: '` + up + `'}
tools:
  travel__book: {access: write, reentrancy: reentrant, idempotent: true, undo: {tool: travel__unbook, args: '{"chain": "{args.chain}", "step": "{args.step}"}'}}
  travel__unbook: {access: write, reentrancy: reentrant, idempotent: true}
` + more
}

// sideEffectsUpstream serves the travel upstream (book, unbook, close) on
// loopback, recording into s.
func sideEffectsUpstream(t *testing.T, s *sideEffects) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "travel", Version: "1"}, nil)
	type leg struct {
		Chain int `json:"chain"`
		Step  int `json:"step"`
	}
	key := func(req *mcp.CallToolRequest) string {
		k, _ := req.Params.Meta["reach/idempotency_key"].(string)
		return k
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "book", Description: "Book one leg of a trip."},
		func(_ context.Context, req *mcp.CallToolRequest, a leg) (*mcp.CallToolResult, any, error) {
			s.mu.Lock()
			s.booked[key(req)]++
			s.legs[fmt.Sprintf("%d/%d", a.Chain, a.Step)]++
			s.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(`{"ref":"R-%d-%d"}`, a.Chain, a.Step)}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "unbook", Description: "Cancel one leg."},
		func(_ context.Context, req *mcp.CallToolRequest, a leg) (*mcp.CallToolResult, any, error) {
			if s.failsUndo != nil && s.failsUndo(a.Chain, a.Step) {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the airline's line is busy"}}}, nil, nil
			}
			s.mu.Lock()
			s.unbooked[key(req)]++
			s.undone[fmt.Sprintf("%d/%d", a.Chain, a.Step)]++
			s.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `"cancelled"`}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "close", Description: "Close the account."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			s.mu.Lock()
			s.closed[key(req)]++
			s.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `"closed"`}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
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
	l := newSideEffects(nil)
	cfg := travelConfig(t, sideEffectsUpstream(t, l), `budgets:
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
	stopServe(t, cmd, os.Interrupt)

	l.mu.Lock()
	defer l.mu.Unlock()
	l.bookedOnce(t, "")
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
				if l.legs[id] == 0 || l.undone[id] != 0 {
					t.Errorf("finished chain %d: leg %d booked %d times, undone %d times", c, step, l.legs[id], l.undone[id])
				}
			case l.legs[id] > 0 && l.undone[id] != 1 && !cutOff[id]:
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
