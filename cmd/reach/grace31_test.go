package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// heldUpstream is an MCP upstream whose tool hold (a write) runs until the
// test releases it: honouring its cancellation (it returns when its call
// is cancelled), or deaf to it (it returns only when released).
type heldUpstream struct {
	mu      sync.Mutex
	runs    int
	started chan struct{}
	release chan struct{}
}

func newHeldUpstream(t *testing.T, deaf bool) (*heldUpstream, string) {
	h := &heldUpstream{started: make(chan struct{}, 8), release: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "held", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "hold", Description: "Book something, slowly."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			h.mu.Lock()
			h.runs++
			h.mu.Unlock()
			h.started <- struct{}{}
			done := ctx.Done()
			if deaf {
				done = nil
			}
			select {
			case <-h.release:
			case <-done:
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `"booked"`}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() {
		h.open()
		srv.Close()
	})
	return h, srv.URL
}

func (h *heldUpstream) open() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

func (h *heldUpstream) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs
}

// TestGrace31CallPastTheGrace stops a real `reach serve` (SIGTERM) while a
// write of a named request runs on its upstream past the 5 s shutdown
// grace, its tool honouring its cancellation or deaf to it, then restarts
// it over the same data folder. The stop ends the request (the call
// cancelled) and closes the store only once the call returned (for up to
// a second grace): the call's end and its audit events are written by the
// stopping life, not refused by a closed store; a deaf tool past that is
// left as a kill leaves it. After the restart: the retry of the call's key
// is answered interrupted (it may have run) and does not run it again, no
// claim is left, the request is not running, and the audit chain
// verifies. Before, the store closed as the grace ended, under the call
// still returning: its end and its events were lost, or written into a
// closing store.
func TestGrace31CallPastTheGrace(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out reach serve's shutdown grace: skipped in -short mode")
	}
	for _, deaf := range []bool{false, true} {
		t.Run(map[bool]string{false: "honours", true: "deaf"}[deaf], func(t *testing.T) { graceCase(t, deaf) })
	}
}

func graceCase(t *testing.T, deaf bool) {
	h, upURL := newHeldUpstream(t, deaf)
	cfg := writeConfig(t, fmt.Sprintf("upstreams:\n  - {name: up, url: '%s'}\n", upURL))
	data, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	cmd := startReach(t, cfg, addr, data)
	body := `{"request_id":"r-held","tool_calls":[{"call_id":"h1","tool":"up__hold","idempotency_key":"k-held","arguments":{}}]}`
	go func() {
		resp, err := http.Post(base+"/v1/calls", "application/json", strings.NewReader(body))
		if err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-h.started:
	case <-time.After(time.Minute):
		t.Fatal("the held call did not reach its upstream")
	}
	if err := stopServe(t, cmd, syscall.SIGTERM); err != nil {
		t.Fatalf("reach serve stopped with %v", err)
	}
	h.open() // a deaf tool returns only now, its gateway gone

	ctx := context.Background()
	st, err := sqlite.Open(ctx, data, &sqlite.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	frames, err := st.RequestFrames(ctx, "r-held")
	if err != nil {
		t.Fatal(err)
	}
	var held *store.Frame
	for _, f := range frames {
		if f.Name == "up__hold" {
			held = f
		}
	}
	recs, err := st.RequestAudit(ctx, "r-held")
	if err != nil {
		t.Fatal(err)
	}
	ended := false
	for _, r := range recs {
		d := string(r.Data)
		if strings.Contains(d, `"name":"up__hold"`) && strings.Contains(d, `"decision":"cancelled"`) {
			ended = true
		}
	}
	st.Close()
	// The call returned on its cancellation (the gateway cuts its
	// connection to the upstream, deaf or not) within the drain: the
	// stopping life wrote its end and its audit event.
	if held == nil || held.State != "cancelled" {
		t.Errorf("the held call's checkpoint after the stop: %+v; want cancelled, written by the stopping life", held)
	}
	if !ended {
		t.Errorf("the audit log of r-held after the stop lacks the held call's end (cancelled)")
	}

	cmd = startReach(t, cfg, addr, data)
	res := call(t, base, `{"tool_calls":[{"call_id":"h2","tool":"up__hold","idempotency_key":"k-held","arguments":{}}]}`)
	if res.Error == nil || res.Error.Code != "interrupted" || res.Error.Suggestion == "" {
		t.Errorf("the retry of the held call's key after the restart: %+v; want interrupted, with a suggestion", res)
	}
	stopServe(t, cmd, os.Interrupt)
	if n := h.count(); n != 1 {
		t.Errorf("the held call ran %d times on its upstream; want once", n)
	}
	st, err = sqlite.Open(ctx, data, &sqlite.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if claims, err := st.ClaimedKeys(ctx); err != nil || len(claims) != 0 {
		t.Errorf("claims left in the store: %v (%v)", claims, err)
	}
	if r, err := st.GetRequest(ctx, "r-held"); err != nil || r.State == "running" {
		t.Errorf("the stored request r-held: %+v (%v); want it not running", r, err)
	}
	if rep, err := audit.Verify(ctx, st); err != nil || rep.Events == 0 {
		t.Errorf("audit.Verify: %+v, %v", rep, err)
	}
}
