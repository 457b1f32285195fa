package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// heldApprovals holds a call until the UI approves it.
type heldApprovals struct {
	mu       sync.Mutex
	items    []Approval
	released chan struct{}
}

func (h *heldApprovals) List(*http.Request) []Approval {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Approval(nil), h.items...)
}
func (h *heldApprovals) Approve(_ *http.Request, id, reason string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.items {
		if h.items[i].ID == id && h.items[i].Status == "pending" {
			h.items[i].Status = "approved"
			close(h.released)
		}
	}
	return nil
}
func (h *heldApprovals) Deny(_ *http.Request, id, reason string) error { return nil }

// Approve implements reach.Approver: it files the approval and holds the
// call until the UI approves it.
func (h *heldApprovals) Approve2(ctx context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
	h.mu.Lock()
	h.items = append(h.items, Approval{ID: "ap-1", Tool: c.Tool, Args: string(c.Args()), Status: "pending",
		Request: c.Request().ID(), AskedBy: c.Request().Principal(), Needs: "a reviewer", Impact: string(c.Access()), Expires: time.Now().Add(time.Hour)})
	h.mu.Unlock()
	select {
	case <-h.released:
		return reach.Permit, nil
	case <-ctx.Done():
		return reach.NeedsApproval, &reach.Error{Code: "approval_pending", Message: "still waiting"}
	}
}

type approverAdapter struct{ h *heldApprovals }

func (a approverAdapter) Approve(ctx context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
	return a.h.Approve2(ctx, c)
}

// TestBrowser drives the UI in a real browser: the running request is
// listed, its graph shows the refused cycle, Cancel stops it, and an
// approval granted in the inbox lets the held call complete once.
func TestBrowser(t *testing.T) {
	root, _ := filepath.Abs("../..")
	pw := filepath.Join(root, ".cache/browser/node_modules/playwright-core")
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (scripts/browser-deps.sh installs it)")
	}
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(pw); err != nil || statErr != nil {
		t.Skip("node or playwright-core missing (scripts/browser-deps.sh installs them)")
	}
	held := &heldApprovals{released: make(chan struct{})}
	rt := reach.New(&reach.Options{Approver: approverAdapter{held}})
	var runs int
	var mu sync.Mutex
	rt.MustRegister(
		reach.Tool{Name: "crawl", Reentrancy: reach.Reentrant, Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			mctx, m, err := rt.BeginModel(ctx, "inner")
			if err != nil {
				return nil, err
			}
			m.EndModel(reach.TokenUsage{Input: 10})
			rt.Call(mctx, &reach.Call{ID: "again", Tool: "crawl", Arguments: args}) // refused: cycle
			<-ctx.Done()                                                            // then runs until stopped
			return nil, context.Cause(ctx)
		}},
		reach.Tool{Name: "refund_order", Access: reach.HighRisk, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			runs++
			mu.Unlock()
			return json.RawMessage(`"refunded"`), nil
		}},
	)
	ctx, busy, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "busy", Principal: "alice", Budget: &reach.Budget{ToolCalls: 20}})
	go func() {
		mctx, m, _ := rt.BeginModel(ctx, "outer")
		rt.Call(mctx, &reach.Call{ID: "c1", Tool: "crawl", Arguments: json.RawMessage(`{"site":"example"}`)})
		m.EndModel(reach.TokenUsage{Input: 100})
	}()
	rctx, rreq, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "refund", Principal: "bob"})
	defer rreq.End()
	refund := make(chan *reach.Result, 1)
	go func() {
		refund <- rt.Call(rctx, &reach.Call{ID: "r1", Tool: "refund_order", Arguments: json.RawMessage(`{"order":7}`)})
	}()
	for len(held.List(nil)) == 0 || len(busy.Frames()) < 4 {
		time.Sleep(5 * time.Millisecond) // wait for both to be in flight
	}
	srv := httptest.NewServer(New(Options{Runtime: rt, Approvals: held}))
	defer srv.Close()
	// Screenshots are kept as test artifacts (gitignored), or where
	// $REACH_ARTIFACTS says.
	shots := os.Getenv("REACH_ARTIFACTS")
	if shots == "" {
		shots = filepath.Join(root, ".cache", "artifacts", "ui")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), node, "testdata/browser.js")
	cmd.Env = append(os.Environ(), "BASE="+srv.URL, "CHROMIUM="+chromium, "SHOTS="+shots, "PW="+pw)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("browser script: %v\n%s", err, out)
	}
	var saw struct {
		ListState, StateAfterCancel, Flash, ApprovalTool, ApprovalFlash, Error string
		CycleEdges, RefusedFrames                                              int
	}
	if err := json.Unmarshal(out, &saw); err != nil {
		t.Fatalf("browser output %q: %v", out, err)
	}
	if saw.Error != "" {
		t.Fatalf("browser: %s", saw.Error)
	}
	t.Logf("browser saw %+v; screenshots in %s", saw, shots)
	if saw.ListState != "running" || saw.CycleEdges != 1 || saw.RefusedFrames != 1 {
		t.Errorf("list state %q, cycle edges %d, refused frames %d", saw.ListState, saw.CycleEdges, saw.RefusedFrames)
	}
	// The runtime, not just the page, says the request stopped.
	if busy.State() != "stopped_cancel" || busy.StopCause().Reason != "runaway in the browser test" || !strings.HasPrefix(saw.StateAfterCancel, "stopped_cancel") {
		t.Errorf("after cancel: runtime %s (%+v), page %q", busy.State(), busy.StopCause(), saw.StateAfterCancel)
	}
	select {
	case res := <-refund:
		mu.Lock()
		n := runs
		mu.Unlock()
		if res.IsError() || n != 1 || saw.ApprovalTool != "refund_order" {
			t.Errorf("approved call: %s, ran %d times", res.ModelText(), n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the approved call never completed")
	}
	for _, f := range []string{"1-requests", "2-request", "3-cancelled", "4-approved"} {
		if _, err := os.Stat(filepath.Join(shots, f+".png")); err != nil {
			t.Errorf("screenshot %s missing", f)
		}
	}
}
