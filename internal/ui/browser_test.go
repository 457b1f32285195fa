package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/agentreach/reach/internal/auth"
)

// heldApprovals holds a call until the UI approves it, and records who
// voted.
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

func (h *heldApprovals) Approve(r *http.Request, id, reason string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.items {
		if h.items[i].ID == id && h.items[i].Status == "pending" {
			by := "?"
			if who, ok := auth.IdentityFrom(r.Context()); ok {
				by = who.Principal
			}
			h.items[i].Status = "approved"
			h.items[i].Votes = append(h.items[i].Votes, Vote{By: by, As: "reviewer", At: time.Now(), Reason: reason})
			close(h.released)
			return nil
		}
	}
	return fmt.Errorf("no pending approval %s", id)
}

func (h *heldApprovals) Deny(_ *http.Request, id, reason string) error { return nil }

// approver files the approval and holds the call until the UI approves it.
type approver struct{ h *heldApprovals }

func (a approver) Approve(ctx context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
	h := a.h
	h.mu.Lock()
	h.items = append(h.items, Approval{ID: "ap-1", Tool: c.Tool, Args: string(c.Args()), Status: "pending",
		Request: c.Request().ID(), AskedBy: c.Request().Principal(), Agent: "support-bot", Needs: "user+reviewer",
		Impact: "high_risk; cannot be undone", Operation: "Refunds an order to the card it was paid with.",
		Why: c.Why, Created: time.Now(), Expires: time.Now().Add(15 * time.Minute)})
	h.mu.Unlock()
	select {
	case <-h.released:
		return reach.Permit, nil
	case <-ctx.Done():
		return reach.NeedsApproval, &reach.Error{Code: "approval_pending", Message: "still waiting"}
	}
}

// fakeAudit is an audit log of long rows (to see that the table wraps).
type fakeAudit struct{}

func (fakeAudit) Search(context.Context, AuditQuery, int) ([]AuditRow, int64, error) {
	var rows []AuditRow
	for i := range 30 {
		rows = append(rows, AuditRow{Seq: int64(i + 1), Time: time.Now().Add(-time.Duration(30-i) * time.Minute), Request: "busy",
			Principal: "alice@example.com", Frame: fmt.Sprintf("%016x", 0xabcdef0123456789+uint64(i)), Name: "crawl_the_whole_site_for_every_page",
			Decision: "refused", Reason: strings.Repeat("This would create a cycle: crawl {\"site\":\"example\"} is already on your call stack. ", 3)})
	}
	return rows, 0, nil
}

func (fakeAudit) Verify(context.Context) (bool, string) { return true, "30 events, chain intact" }

// TestBrowser drives the UI in a real browser (Debian's chromium through
// playwright-core), signed in with an API key on the login page: the
// requests list with real states and a state filter, a wide fan-out's
// graph wrapped, zoomed and folded, a running request cancelled (its stop
// buttons then gone), an approval decided from its request's page, the
// approvals inbox with who voted, the audit log and the tools, each page
// at 1400 and 800 px without a page-wide horizontal scroll, and log out.
// Screenshots go to the test's temporary folder, and are copied where
// $REACH_ARTIFACTS says.
func TestBrowser(t *testing.T) {
	dir := os.Getenv("REACH_BROWSER_CACHE")
	if dir == "" {
		root, _ := filepath.Abs("../..")
		dir = filepath.Join(root, ".cache", "browser")
	}
	pw := filepath.Join(dir, "node_modules", "playwright-core")
	// Missing, the test skips, saying why, or fails under REACH_CI (make
	// test): CI never passes by skipping.
	skip := t.Skip
	if os.Getenv("REACH_CI") != "" {
		skip = t.Fatal
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		skip("chromium not installed (scripts/browser-deps.sh installs it)")
	}
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(pw); err != nil || statErr != nil {
		skip("node or playwright-core missing (scripts/browser-deps.sh installs them)")
	}
	held := &heldApprovals{released: make(chan struct{})}
	rt := reach.New(&reach.Options{Approver: approver{held}})
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
		reach.Tool{Name: "refund_order", Access: reach.HighRisk, Description: "Refunds an order.", Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			runs++
			mu.Unlock()
			return json.RawMessage(`"refunded"`), nil
		}},
		reach.Tool{Name: "search_kb", Access: reach.Read, Reentrancy: reach.Reentrant, Description: "Searches the knowledge base.",
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`["a","b"]`), nil
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
		refund <- rt.Call(rctx, &reach.Call{ID: "r1", Tool: "refund_order", Arguments: json.RawMessage(`{"order":7}`), Why: "the customer was charged twice"})
	}()
	// A wide fan-out: one model turn that chose 30 searches.
	wctx, _, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "wide", Principal: "alice"})
	mctx, m, _ := rt.BeginModel(wctx, "planner")
	for i := range 30 {
		rt.Call(mctx, &reach.Call{ID: fmt.Sprint("s", i), Tool: "search_kb", Arguments: json.RawMessage(fmt.Sprintf(`{"q":"topic %d"}`, i))})
	}
	m.EndModel(reach.TokenUsage{Input: 2000, Output: 300})
	_, hostile, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "hostile", Principal: "alice"})
	const hostileBy, hostileWhy = `<img src=x onerror="window.__pwned='by'">`, `</div><script>window.__pwned='reason'</script>`
	hostile.Stop(reach.Cancel, hostileBy, hostileWhy)
	_, done, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "finished", Principal: "alice"})
	done.End()
	for len(held.List(nil)) == 0 || len(busy.Frames()) < 4 {
		time.Sleep(5 * time.Millisecond) // wait for both to be in flight
	}
	const key = "rk_browser_test_key"
	login := &Login{
		Header: func(*http.Request) (*auth.Identity, error) { return nil, auth.ErrBadKey },
		Credential: func(_ context.Context, c string) (*auth.Identity, time.Time, error) {
			if c != key {
				return nil, time.Time{}, auth.ErrBadKey
			}
			return &auth.Identity{Principal: "alice", Roles: []string{"operator"}, Method: "api_key"}, time.Time{}, nil
		},
	}
	srv := httptest.NewServer(New(Options{Runtime: rt, Approvals: held, Audit: fakeAudit{}, Login: login,
		Actor: func(r *http.Request) Actor {
			id, _ := auth.IdentityFrom(r.Context())
			return Actor{Principal: id.Principal}
		}}))
	defer srv.Close()
	shots := t.TempDir()
	cmd := exec.CommandContext(t.Context(), node, "testdata/browser.js")
	cmd.Env = append(os.Environ(), "BASE="+srv.URL, "CHROMIUM="+chromium, "SHOTS="+shots, "PW="+pw, "KEY="+key)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("browser script: %v\n%s", err, out)
	}
	var saw struct {
		Error                           string
		LoginRedirect, LoginError, User string
		Cookie                          struct {
			HTTPOnly, Secure bool
			SameSite, Value  string
		}
		ListStates                                   map[string]string
		IdleFiltered                                 []string
		HostileStop, HostileRan                      string
		HostileMarkup                                int
		WideBoxes, WideFoldedBoxes                   int
		WideFitWidth, WideZoomedWidth, GraphBoxWidth float64
		WideFoldMark                                 string
		CycleEdges, RefusedFrames                    int
		StateAfterCancel                             string
		StopFormsAfterCancel                         int
		ApprovalWhy, ApprovalFlash                   string
		Votes                                        string
		ExpiresText                                  string
		Overflow                                     map[string]float64 // page scroll width minus viewport width, by page and width
		AfterLogout                                  string
	}
	if err := json.Unmarshal(out, &saw); err != nil {
		t.Fatalf("browser output %q: %v", out, err)
	}
	if saw.Error != "" {
		t.Fatalf("browser: %s", saw.Error)
	}
	t.Logf("browser saw %+v; screenshots in %s", saw, shots)
	if saw.LoginRedirect != "/ui/login" || saw.LoginError == "" || saw.User != "alice" {
		t.Errorf("login: redirected to %q, a wrong key says %q, signed in as %q", saw.LoginRedirect, saw.LoginError, saw.User)
	}
	if c := saw.Cookie; !c.HTTPOnly || c.SameSite != "Strict" || c.Value == "" || strings.Contains(c.Value, key) {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, not the key", c)
	}
	want := map[string]string{"busy": "running", "refund": "waiting for approval", "wide": "idle", "finished": "done"}
	for id, state := range want {
		if saw.ListStates[id] != state {
			t.Errorf("the list shows %s as %q, want %q", id, saw.ListStates[id], state)
		}
	}
	if fmt.Sprint(saw.IdleFiltered) != "[wide]" {
		t.Errorf("the idle filter lists %v, want [wide]", saw.IdleFiltered)
	}
	if !strings.Contains(saw.HostileStop, "by "+hostileBy) || !strings.Contains(saw.HostileStop, hostileWhy) || saw.HostileRan != "" || saw.HostileMarkup != 0 {
		t.Errorf("a stop by %q for %q shows %q, ran %q, %d elements of its markup; want its text, nothing run", hostileBy, hostileWhy, saw.HostileStop, saw.HostileRan, saw.HostileMarkup)
	}
	if saw.WideBoxes != 31 || saw.WideFitWidth > saw.GraphBoxWidth+1 || saw.WideZoomedWidth <= saw.WideFitWidth*1.2 {
		t.Errorf("wide graph: %d boxes (want 31), fit %.0f px in a %.0f px box, zoomed %.0f px", saw.WideBoxes, saw.WideFitWidth, saw.GraphBoxWidth, saw.WideZoomedWidth)
	}
	if saw.WideFoldedBoxes != 1 || saw.WideFoldMark != "+30" {
		t.Errorf("folding the model turn left %d boxes, mark %q; want 1 and +30", saw.WideFoldedBoxes, saw.WideFoldMark)
	}
	if saw.CycleEdges != 1 || saw.RefusedFrames != 1 {
		t.Errorf("cycle edges %d, refused frames %d", saw.CycleEdges, saw.RefusedFrames)
	}
	// The runtime, not just the page, says the request stopped.
	if busy.State() != "stopped_cancel" || busy.StopCause().Reason != "runaway in the browser test" || busy.StopCause().By != "alice" ||
		saw.StateAfterCancel != "stopped (cancel)" || saw.StopFormsAfterCancel != 0 {
		t.Errorf("after cancel: runtime %s (%+v), page %q with %d stop forms", busy.State(), busy.StopCause(), saw.StateAfterCancel, saw.StopFormsAfterCancel)
	}
	if saw.ApprovalWhy != "the customer was charged twice" || saw.ApprovalFlash != "Your approval is recorded." {
		t.Errorf("the request page's approval: why %q, flash %q", saw.ApprovalWhy, saw.ApprovalFlash)
	}
	if !strings.Contains(saw.Votes, "approved by alice as reviewer") || !strings.HasPrefix(saw.ExpiresText, "in 1") {
		t.Errorf("approvals inbox: votes %q, expiry %q", saw.Votes, saw.ExpiresText)
	}
	for page, over := range saw.Overflow {
		if over > 0 {
			t.Errorf("%s scrolls sideways by %.0f px", page, over)
		}
	}
	if len(saw.Overflow) < 10 {
		t.Errorf("overflow measured on %d pages, want 5 pages at 2 widths", len(saw.Overflow))
	}
	if saw.AfterLogout != "/ui/login" {
		t.Errorf("after logout, /ui/ leads to %q", saw.AfterLogout)
	}
	select {
	case res := <-refund:
		mu.Lock()
		n := runs
		mu.Unlock()
		if res.IsError() || n != 1 {
			t.Errorf("approved call: %s, ran %d times", res.ModelText(), n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the approved call never completed")
	}
	names := []string{"0-login", "1-requests", "2-graph-wide", "3-graph-folded", "4-cancelled", "5-approve-on-request", "6-approvals", "7-audit", "8-tools",
		"800-requests", "800-request", "800-approvals", "800-audit", "800-tools", "9-logged-out"}
	dst := os.Getenv("REACH_ARTIFACTS")
	for _, f := range names {
		src := filepath.Join(shots, f+".png")
		if st, err := os.Stat(src); err != nil || st.Size() == 0 {
			t.Errorf("screenshot %s missing", f)
			continue
		}
		if dst != "" {
			if err := copyFile(src, filepath.Join(dst, f+".png")); err != nil {
				t.Errorf("copying %s to $REACH_ARTIFACTS: %v", f, err)
			}
		}
	}
}

func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
