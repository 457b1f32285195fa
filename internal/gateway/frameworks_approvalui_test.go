package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// browserDeps finds Debian's chromium and the playwright-core that
// scripts/browser-deps.sh installs; without them the test skips, saying
// why, or fails under REACH_CI (make test).
func browserDeps(t *testing.T) (chromium, pw string) {
	t.Helper()
	dir := os.Getenv("REACH_BROWSER_CACHE")
	if dir == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".cache", "browser")
	}
	missing := func(what string) {
		t.Helper()
		if os.Getenv("REACH_CI") != "" {
			t.Fatalf("%s is missing: run scripts/browser-deps.sh (make test does)", what)
		}
		t.Skipf("%s is missing: run scripts/browser-deps.sh (make test does)", what)
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		missing("chromium")
	}
	pw = filepath.Join(dir, "node_modules", "playwright-core")
	if _, err := os.Stat(pw); err != nil {
		missing(pw)
	}
	return chromium, pw
}

// uiApproval is what approve-browser.js saw of an approval in reach's UI.
type uiApproval struct {
	State, Text, Flash, Error string
}

// inbox is a browser (chromium) showing the UI's approvals inbox at base.
type inbox struct {
	in  io.WriteCloser
	out *bufio.Reader
	cmd *exec.Cmd
}

// openInbox starts chromium on the inbox and returns once it shows it.
func openInbox(t *testing.T, node, chromium, pw, base string) *inbox {
	t.Helper()
	script, err := filepath.Abs("testdata/frameworks/approve-browser.js")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), node, script)
	cmd.Env = append(os.Environ(), "BASE="+base, "CHROMIUM="+chromium, "PW="+pw)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	b := &inbox{in: in, out: bufio.NewReader(out), cmd: cmd}
	if line, err := b.out.ReadString('\n'); strings.TrimSpace(line) != "ready" {
		t.Fatalf("the browser did not open the inbox: %q %v", line, err)
	}
	return b
}

// approve approves approval id in the browser: the inbox, a reason typed,
// the approve button pressed.
func (b *inbox) approve(t *testing.T, id string) uiApproval {
	t.Helper()
	if _, err := io.WriteString(b.in, id+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := b.out.ReadString('\n')
	if err != nil {
		t.Fatalf("browser script: %v %q", err, line)
	}
	var saw uiApproval
	if err := json.Unmarshal([]byte(line), &saw); err != nil {
		t.Fatalf("browser script's output: %v\n%s", err, line)
	}
	if saw.Error != "" {
		t.Fatalf("in the browser: %s", saw.Error)
	}
	return saw
}

// TestFrameworksApprovedInBrowser: OpenAI Agents, the AI SDK and LangGraph
// on their defaults call a refund that needs approval, which a user
// approves in reach's UI in a real browser (chromium), both ways reach
// documents:
//   - held (approvals.wait): the framework's tool call waits; the inbox
//     shows the approval pending with its tool and arguments; once it is
//     approved there the call runs, once, and the run ends with its result;
//   - pending (approvals.wait 0, the default): the model reads that the
//     call waits for approval and what to do (call it again with the same
//     arguments once approved); the user approves in the inbox meanwhile,
//     and the model's call made again in the same run runs the refund; a
//     further repeat of it does not run it again.
//
// Each way the refund's calls are in the run's one request, the approval
// holds the vote with the reason typed in the browser, and the audit log
// has the approval and the one refund that ran.
func TestFrameworksApprovedInBrowser(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "openai", "ai", "@ai-sdk/mcp", "@ai-sdk/openai",
		"@langchain/langgraph", "@langchain/mcp-adapters", "@langchain/openai")
	chromium, pw := browserDeps(t)
	for _, fw := range []string{"openai-agents", "ai-sdk", "langgraph"} {
		t.Run(fw+"/held", func(t *testing.T) {
			// The wait is under the 60 s of the TypeScript SDK's client
			// (LangGraph's): the user decides within it.
			s := newShop(t, "approvals: {wait: 50s}\n")
			b := openInbox(t, node, chromium, pw, s.url) // before the call waits
			done := make(chan agentRun, 1)
			go func() { done <- runAgent(t, dir, node, fw, "", "", s.url+"/mcp", s.url+"/v1", "approve", nil) }()
			id := pendingApproval(t, s.url, done)
			saw := b.approve(t, id)
			checkInbox(t, saw)
			r := <-done
			if !r.OK || !strings.Contains(r.Text, "refunded order 1001") {
				t.Fatalf("the run after the approval: %+v", r)
			}
			checkApprovedOnce(t, s, id, "completed")
		})
		t.Run(fw+"/pending", func(t *testing.T) {
			s := newShop(t, "approvals: {wait: 0s}\n")
			gate := &turnGate{held: make(chan struct{}, 1), hold: make(chan struct{})}
			s.model.gate.Store(gate)
			var once sync.Once
			release := func() { once.Do(func() { close(gate.hold) }) }
			t.Cleanup(release) // a failed test does not leave the model's turn waiting
			done := make(chan agentRun, 1)
			go func() { done <- runAgent(t, dir, node, fw, "", "", s.url+"/mcp", s.url+"/v1", "approveagain", nil) }()
			select {
			case <-gate.held: // the model has read that the refund waits
			case r := <-done:
				t.Fatalf("the run ended before the model read the pending approval: %+v", r)
			case <-time.After(90 * time.Second):
				t.Fatal("the model never read the pending approval")
			}
			if n := s.up.called("refund"); n != 0 {
				t.Fatalf("%d refunds ran before the approval", n)
			}
			_, b := do(t, "GET", s.url+"/v1/approvals?status=pending", "", nil)
			id, _ := path(b, "approvals", 0, "id").(string)
			if id == "" {
				t.Fatalf("no pending approval while the model waits: %v", b)
			}
			saw := openInbox(t, node, chromium, pw, s.url).approve(t, id)
			checkInbox(t, saw)
			release()
			r := <-done
			if !r.OK {
				t.Fatalf("the run: %+v", r)
			}
			parts := strings.Split(strings.TrimPrefix(r.Text, "refund: "), " | ")
			if len(parts) != 3 || !strings.Contains(parts[0], "needs approval") || !strings.Contains(parts[0], "call it again with the same arguments") ||
				!strings.Contains(parts[1], "refunded order 1001") {
				t.Fatalf("the model read %q; want the approval pending, then the refund's result", r.Text)
			}
			t.Logf("the model read of the refund repeated after it ran: %s", clip(parts[2], 300))
			if strings.Contains(parts[2], "needs approval") {
				t.Errorf("the refund repeated after it ran asks for approval again: %s", parts[2])
			}
			// The refund pending, run once approved, and its repeat
			// answered from the idempotency record (which the audit
			// records as completed, as the call that ran: the upstream's
			// count says it ran once).
			checkApprovedOnce(t, s, id, "awaiting_approval", "completed", "completed")
		})
	}
}

// checkInbox checks what the browser saw of a pending refund's approval.
func checkInbox(t *testing.T, saw uiApproval) {
	t.Helper()
	if saw.State != "pending" || !strings.Contains(saw.Text, "up__refund") || !strings.Contains(saw.Text, "1001") {
		t.Errorf("the inbox showed %q: %s; want the refund of order 1001 pending", saw.State, clip(saw.Text, 400))
	}
	if saw.Flash == "" {
		t.Error("no word in the UI after approving")
	}
}

// checkApprovedOnce checks a run whose refund was approved (approval id)
// in the browser: the refund ran once, every call of it is in one
// request, the approval holds the browser's vote, and the audit log has
// the approval asked, approved and used once, and the refund calls
// wantCalls (their decisions, in order).
func checkApprovedOnce(t *testing.T, s *shop, id string, wantCalls ...string) {
	t.Helper()
	if n := s.up.called("refund"); n != 1 {
		t.Errorf("%d refunds ran, want 1", n)
	}
	reqs := map[string]bool{}
	for _, q := range s.g.rt.Requests() {
		for _, f := range q.Frames() {
			if f.Name == "up__refund" {
				reqs[q.Root().ID()] = true
				if f.State() == reach.Failed {
					t.Logf("a refund call failed: %v", f.Err())
				}
			}
		}
	}
	if len(reqs) != 1 {
		t.Fatalf("the refund's calls are in %d requests (%v), want the run's one", len(reqs), reqs)
	}
	_, b := do(t, "GET", s.url+"/v1/approvals/"+id, "", nil)
	if st, _ := path(b, "status").(string); st != "used" { // approved, and its call ran
		t.Errorf("the approval after the browser approved it and the refund ran: %v", b)
	}
	if v, _ := path(b, "votes", 0, "reason").(string); v != "checked the order" {
		t.Errorf("the approval's vote: %v, want the reason typed in the browser", path(b, "votes"))
	}
	var req string
	for r := range reqs {
		req = r
	}
	if r, _ := path(b, "request").(string); r != req {
		t.Errorf("the approval names request %q, the refund ran in %s", r, req)
	}
	s.g.audit.Flush(t.Context())
	code, out := do(t, "GET", s.url+"/v1/audit?request="+req, "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/audit: %d %v", code, out)
	}
	events, _ := out["events"].([]any)
	var approvals, refunds []string
	for _, e := range events {
		switch {
		case path(e, "event", "kind") == "approval":
			approvals = append(approvals, fmt.Sprint(path(e, "event", "decision")))
			if path(e, "event", "decision") == "approved" && !strings.Contains(fmt.Sprint(path(e, "event", "message")), "checked the order") {
				t.Errorf("the audit's approval does not hold the reason typed in the browser: %v", path(e, "event"))
			}
		case path(e, "event", "kind") == "tool" && path(e, "event", "name") == "up__refund":
			refunds = append(refunds, fmt.Sprint(path(e, "event", "decision")))
		}
	}
	// Each once, in the order they happened: with a held call, the call
	// resumes as the decision is made, and its "used" was at times
	// appended before the decision's "approved" (the queue now writes its
	// events in the order it made them).
	if !slices.Equal(approvals, []string{"requested", "approved", "used"}) || !slices.Equal(refunds, wantCalls) {
		t.Errorf("the audit of request %s: approval %v, refund calls %v; want requested, approved, used in that order and %v\n%v",
			req, approvals, refunds, wantCalls, clip(fmt.Sprint(events), 3000))
	}
}
