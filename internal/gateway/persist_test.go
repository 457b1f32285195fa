package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/builtin"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// With a data folder every decision reaches the audit log, writes are
// checkpointed with their idempotency key, and the chain verifies after a
// restart.
func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	g := newTestGateway(t, &config.Config{Data: dir})
	srv := serveTest(t, g)
	status, body := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"p1","tool_calls":[
		{"call_id":"c1","tool":"get_order","arguments":{"order_id":"1001"}},
		{"call_id":"c2","tool":"refund_order","arguments":{"order_id":"1001","amount":5,"reason":"damaged box"}},
		{"call_id":"c3","tool":"no_such_tool","arguments":{}}]}`, nil)
	if status != 200 {
		t.Fatalf("calls: %d %v", status, body)
	}
	if status, body := do(t, "GET", srv.URL+"/v1/deadletters", "", nil); status != 200 || body["deadletters"] == nil {
		t.Fatalf("deadletters: %d %v", status, body)
	}
	srv.Close()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, dir, &sqlite.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep, err := audit.Verify(ctx, st)
	if err != nil || rep.Events == 0 {
		t.Fatalf("verify: %v (%d events)", err, rep.Events)
	}
	evs, _ := audit.Show(ctx, st, "p1")
	decisions := map[string]string{}
	for _, e := range evs {
		decisions[e.Name] = e.Decision
	}
	if decisions["get_order"] != "completed" || decisions["no_such_tool"] != "refused" {
		t.Errorf("audit decisions = %v", decisions)
	}
	frames, _ := st.RequestFrames(ctx, "p1")
	var refund *store.Frame
	for _, f := range frames {
		if f.Name == "refund_order" {
			refund = f
		}
	}
	if refund == nil || refund.IdemKey == "" || !store.FrameDone(refund.State) {
		t.Fatalf("refund checkpoint = %+v", refund)
	}
}

// ticketTools registers close and reopen, writes that undo each other, and
// escalate, a write that fails. reopen fails while *failing is set, and
// calls hook, if set, as it runs.
func ticketTools(t *testing.T, g *Gateway, failing *atomic.Bool, hook func()) {
	t.Helper()
	g.rt.MustRegister(
		reach.Tool{Name: "close", Access: reach.Write, Undo: &reach.Followup{Tool: "reopen", Args: `{"ticket": "{args.ticket}"}`},
			Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }},
		reach.Tool{Name: "reopen", Access: reach.Write, Undo: &reach.Followup{Tool: "close", Args: `{"ticket": "{args.ticket}"}`},
			Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
				if hook != nil {
					hook()
				}
				if failing.Load() {
					return nil, &reach.ToolError{Type: "conflict", Message: "the ticket system is down"}
				}
				return args, nil
			}},
		reach.Tool{Name: "escalate", Access: reach.Write, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &reach.ToolError{Type: "conflict", Message: "no one to escalate to"}
		}},
	)
}

// retryFrames returns the checkpoints of the calls the retries of request's
// dead letters made.
func retryFrames(t *testing.T, st store.Store, request string) []*store.Frame {
	t.Helper()
	rs, err := st.ListRequests(t.Context(), store.RequestFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*store.Frame
	for _, r := range rs {
		if strings.HasPrefix(r.ID, request+"/retry/") {
			fs, err := st.RequestFrames(t.Context(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fs...)
		}
	}
	return out
}

// TestDeadLetterRetryThroughRuntime: POST /v1/deadletters/{id}/retry runs
// the undo through the runtime's queue, as an undo: the retry registers no
// undo of its own, the stored attempts go up by one per retry, and a
// successful retry leaves neither the store's open dead letters nor the
// runtime's queue holding it. A dead letter only the store holds (put
// there by an earlier process) is retried the same way.
func TestDeadLetterRetryThroughRuntime(t *testing.T) {
	g, srv, failing, open := deadLetterRig(t)
	for _, d := range open {
		retry := func(wantStatus reach.Status) map[string]any {
			t.Helper()
			status, out := do(t, "POST", fmt.Sprintf("%s/v1/deadletters/dl-%d/retry", srv.URL, d.ID), "", nil)
			if status != 200 || out["status"] != string(wantStatus) {
				t.Fatalf("retrying %d = %d %v, want 200 and %s", d.ID, status, out, wantStatus)
			}
			return out["deadletter"].(map[string]any)
		}
		failing.Store(true)
		got := retry(reach.StatusError)
		if got["attempts"] != float64(d.Attempts+1) || got["state"] != store.DeadOpen {
			t.Errorf("after a failed retry of %s's dead letter: %v, want %d attempts, open", d.Request, got, d.Attempts+1)
		}
		if q := queued(t, g, d); len(q) != 1 {
			t.Errorf("after a failed retry of %s's dead letter, the runtime queues %d of it, want 1: %+v", d.Request, len(q), q)
		}
		failing.Store(false)
		got = retry(reach.StatusSuccess)
		if got["attempts"] != float64(d.Attempts+2) || got["state"] != store.DeadRetried {
			t.Errorf("after a successful retry of %s's dead letter: %v, want %d attempts, retried", d.Request, got, d.Attempts+2)
		}
		if q := queued(t, g, d); len(q) != 0 {
			t.Errorf("after a successful retry of %s's dead letter, the runtime still queues it: %+v", d.Request, q)
		}
		frames := retryFrames(t, g.store, d.Request)
		done := 0
		for _, f := range frames {
			if f.Name == "reopen" && f.State == "completed" {
				done++
			}
			if len(f.Undo) != 0 {
				t.Errorf("the retry of %s's dead letter registered an undo: %s %s", d.Request, f.Name, f.Undo)
			}
		}
		if done != 1 {
			t.Errorf("the retries of %s's dead letter: %d completed reopen calls, want 1 (%d checkpoints)", d.Request, done, len(frames))
		}
		if status, out := do(t, "POST", fmt.Sprintf("%s/v1/deadletters/%d/retry", srv.URL, d.ID), "", nil); status != http.StatusNotFound {
			t.Errorf("retrying the retried dead letter %d = %d %v, want 404", d.ID, status, out)
		}
	}
}

// deadLetterRig is a gateway with a data folder and two open dead letters
// of reopen: t1's, which the runtime queued when t1's compensation failed
// (failing is still set), and t2's, which only the store holds (put there
// by an earlier process). open lists them as stored.
func deadLetterRig(t *testing.T) (g *Gateway, srv *httptest.Server, failing *atomic.Bool, open []*store.DeadLetter) {
	t.Helper()
	g = newTestGateway(t, &config.Config{Data: t.TempDir()})
	failing = &atomic.Bool{}
	ticketTools(t, g, failing, nil)
	srv = serveTest(t, g)
	failing.Store(true)
	for _, c := range []string{`{"call_id":"c1","tool":"close","arguments":{"ticket":7}}`, `{"call_id":"c2","tool":"escalate","arguments":{"ticket":7}}`} {
		if status, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"t1","tool_calls":[`+c+`]}`, nil); status != 200 {
			t.Fatalf("calls: %d %v", status, out)
		}
	}
	stored, err := g.store.ListDeadLetters(t.Context(), store.DeadOpen)
	if q := openDeadLetters(t, g); err != nil || len(stored) != 1 || stored[0].Tool != "reopen" || len(q) != 1 {
		t.Fatalf("after the failed compensation: stored %+v (%v), queued %+v; want reopen's dead letter in both", stored, err, q)
	}
	if _, err := g.store.AddDeadLetter(t.Context(), &store.DeadLetter{Request: "t2", Frame: "00000000000000ab", Tool: "reopen",
		Args: []byte(`{"ticket":8}`), Error: "the ticket system is down", Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	if open, err = g.store.ListDeadLetters(t.Context(), store.DeadOpen); err != nil || len(open) != 2 {
		t.Fatalf("open dead letters: %+v (%v), want t1's and t2's", open, err)
	}
	return g, srv, failing, open
}

// openDeadLetters returns the runtime's open dead letters.
func openDeadLetters(t *testing.T, g *Gateway) []reach.DeadLetter {
	t.Helper()
	q, err := g.rt.DeadLetters(context.Background(), reach.DeadLetterOpen)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// queued returns the runtime's open dead letters of the stored dead letter
// d's undo.
func queued(t *testing.T, g *Gateway, d *store.DeadLetter) []reach.DeadLetter {
	var out []reach.DeadLetter
	for _, q := range openDeadLetters(t, g) {
		if q.Request == d.Request && q.Key == "undo:"+d.Frame {
			out = append(out, q)
		}
	}
	return out
}

// TestDeadLetterRetryBusy: while a retry of a dead letter runs, the queue
// holds it once, taken, and a second retry through the API is refused
// with 409 and counts no attempt.
func TestDeadLetterRetryBusy(t *testing.T) {
	g := newTestGateway(t, &config.Config{Data: t.TempDir()})
	srv := serveTest(t, g)
	d := &store.DeadLetter{Request: "t3", Frame: "00000000000000cd", Tool: "reopen",
		Args: []byte(`{"ticket":9}`), Error: "the ticket system is down", Attempts: 1}
	id, err := g.store.AddDeadLetter(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	u := fmt.Sprintf("%s/v1/deadletters/%d/retry", srv.URL, id)
	var mu sync.Mutex
	var during []string // what went wrong during the first retry
	fail := func(msg string) { mu.Lock(); during = append(during, msg); mu.Unlock() }
	var runs atomic.Int32
	var failing atomic.Bool
	ticketTools(t, g, &failing, func() {
		if runs.Add(1) != 1 {
			return
		}
		// The first retry runs: the queue lists the dead letter once,
		// taken by it.
		q, err := g.rt.DeadLetters(context.Background(), reach.DeadLetterOpen)
		if err != nil || len(q) != 1 || q[0].State != reach.DeadLetterTaken {
			fail(fmt.Sprintf("the queue during the retry: %+v (%v), want the dead letter once, taken", q, err))
		}
		// Not do: this runs in the tool's goroutine, where t.Fatal must not be called.
		resp, err := http.Post(u, "application/json", nil)
		if err != nil {
			fail(err.Error())
			return
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode != http.StatusConflict || path(out, "error", "code") != "busy" {
			fail(fmt.Sprintf("a retry during a retry = %d %v, want 409 busy", resp.StatusCode, out))
		}
	})
	if status, out := do(t, "POST", u, "", nil); status != 200 || out["status"] != string(reach.StatusSuccess) {
		t.Errorf("the first retry = %d %v, want 200 and success", status, out)
	}
	mu.Lock()
	for _, e := range during {
		t.Error(e)
	}
	mu.Unlock()
	if n := runs.Load(); n != 1 {
		t.Errorf("reopen ran %d times, want 1", n)
	}
	ds, _ := g.store.ListDeadLetters(t.Context(), "")
	if len(ds) != 1 || ds[0].Attempts != 2 || ds[0].State != store.DeadRetried {
		t.Errorf("stored dead letters = %+v, want one retried after 2 attempts", ds)
	}
}

// TestDeadLetterDismissThroughAPI: POST /v1/deadletters/{id}/dismiss takes
// the dead letter out of the running gateway's queue (so a dismissed undo
// is not retried later), marks the stored one resolved with who and how,
// and records the dismissal in the audit log. A dismissal needs a note; a
// settled dead letter cannot be dismissed or retried again; a dead letter
// only the store holds is dismissed the same way.
func TestDeadLetterDismissThroughAPI(t *testing.T) {
	g, srv, _, open := deadLetterRig(t)
	for _, d := range open {
		url := fmt.Sprintf("%s/v1/deadletters/%d/dismiss", srv.URL, d.ID)
		for _, body := range []string{``, `{}`, `{"note":"  "}`, `{"note":"x","by":"someone else"}`} {
			if status, out := do(t, "POST", url, body, nil); status != http.StatusBadRequest || out["error"] == nil {
				t.Errorf("dismissing %d with %q = %d %v, want 400", d.ID, body, status, out)
			}
		}
		status, out := do(t, "POST", url, `{"note":"reopened by hand"}`, nil)
		if status != 200 {
			t.Fatalf("dismissing %d = %d %v", d.ID, status, out)
		}
		got := out["deadletter"].(map[string]any)
		if got["state"] != store.DeadResolved || !strings.Contains(fmt.Sprint(got["note"]), "reopened by hand") {
			t.Errorf("dismissed dead letter %d: %v, want resolved with the note", d.ID, got)
		}
		if q := queued(t, g, d); len(q) != 0 {
			t.Errorf("after dismissing %s's dead letter the runtime still queues it: %+v", d.Request, q)
		}
		if status, out := do(t, "POST", url, `{"note":"again"}`, nil); status != http.StatusNotFound {
			t.Errorf("dismissing %d twice = %d %v, want 404", d.ID, status, out)
		}
		if status, out := do(t, "POST", fmt.Sprintf("%s/v1/deadletters/%d/retry", srv.URL, d.ID), "", nil); status != http.StatusNotFound {
			t.Errorf("retrying the dismissed %d = %d %v, want 404", d.ID, status, out)
		}
		g.audit.Flush(t.Context())
		evs, err := audit.Show(t.Context(), g.store, d.Request)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(evs, func(e *audit.Event) bool {
			return e.Kind == "dead_letter" && e.Decision == "dismissed" && e.Message == "reopened by hand"
		}) {
			t.Errorf("the audit log of %s has no dismissal: %+v", d.Request, evs)
		}
	}
	if n := len(openDeadLetters(t, g)); n != 0 {
		t.Errorf("the runtime queues %d dead letters after both were dismissed", n)
	}
}

// TestDeadLetterListShape: GET /v1/deadletters answers the same shape
// whether the store keeps the dead letters or, without a data folder, only
// the runtime: snake_case keys, the arguments as JSON.
func TestDeadLetterListShape(t *testing.T) {
	for _, data := range []bool{true, false} {
		g, err := New(t.Context(), &config.Config{Data: t.TempDir()}, &Options{Ephemeral: !data})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		if (g.store != nil) != data {
			t.Fatalf("with a data folder %v, the gateway has a store: %v", data, g.store != nil)
		}
		var failing atomic.Bool
		ticketTools(t, g, &failing, nil)
		srv := serveTest(t, g)
		failing.Store(true)
		for _, c := range []string{`{"call_id":"c1","tool":"close","arguments":{"ticket":7}}`, `{"call_id":"c2","tool":"escalate","arguments":{"ticket":7}}`} {
			do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"t1","tool_calls":[`+c+`]}`, nil)
		}
		status, out := do(t, "GET", srv.URL+"/v1/deadletters", "", nil)
		list, _ := out["deadletters"].([]any)
		if status != 200 || len(list) != 1 {
			t.Fatalf("with a data folder %v: GET /v1/deadletters = %d %v, want one dead letter", data, status, out)
		}
		d := list[0].(map[string]any)
		args, _ := d["arguments"].(map[string]any)
		if d["request"] != "t1" || d["tool"] != "reopen" || d["state"] != "open" || d["attempts"] == nil ||
			args["ticket"] != float64(7) || d["error"] == "" || !strings.HasPrefix(fmt.Sprint(d["id"]), "dl") {
			t.Errorf("with a data folder %v: dead letter %v", data, d)
		}
	}
}

// TestDeadLetterActionsDoNotOverlap: of concurrent actions on one dead
// letter, one acts and the others are refused: eight dismissals settle it
// once (one audit event), and a retry and a dismissal at once never both
// succeed.
func TestDeadLetterActionsDoNotOverlap(t *testing.T) {
	g, srv, failing, open := deadLetterRig(t)
	failing.Store(false)
	statuses := func(reqs ...string) []int {
		out := make([]int, len(reqs))
		var wg sync.WaitGroup
		for i, r := range reqs {
			wg.Go(func() {
				action, body, _ := strings.Cut(r, " ")
				out[i], _ = do(t, "POST", fmt.Sprintf("%s/v1/deadletters/%d/%s", srv.URL, open[0].ID, action), body, nil)
			})
		}
		wg.Wait()
		return out
	}
	dismiss := `dismiss {"note":"by hand"}`
	ok := 0
	for _, st := range statuses(dismiss, dismiss, dismiss, dismiss, dismiss, dismiss, dismiss, dismiss) {
		if st == 200 {
			ok++
		} else if st != http.StatusConflict && st != http.StatusNotFound {
			t.Errorf("a concurrent dismissal answered %d", st)
		}
	}
	g.audit.Flush(t.Context())
	evs, _ := audit.Show(t.Context(), g.store, open[0].Request)
	dismissals := 0
	for _, e := range evs {
		if e.Kind == "dead_letter" && e.Decision == "dismissed" {
			dismissals++
		}
	}
	if ok != 1 || dismissals != 1 {
		t.Errorf("8 concurrent dismissals: %d succeeded, %d audited; want 1 and 1", ok, dismissals)
	}
	// The other one: a retry and a dismissal at once.
	open = open[1:]
	if st := statuses("retry ", dismiss); st[0] == 200 && st[1] == 200 {
		t.Errorf("a retry and a dismissal of one dead letter both succeeded")
	}
}

// TestDeadLettersWithoutAStore: a gateway without a data folder lists the
// runtime's dead letters and retries and dismisses them by those ids.
func TestDeadLettersWithoutAStore(t *testing.T) {
	g, err := New(t.Context(), &config.Config{}, &Options{Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	var failing atomic.Bool
	ticketTools(t, g, &failing, nil)
	srv := serveTest(t, g)
	failing.Store(true)
	for _, r := range []string{"t1", "t2"} {
		for _, c := range []string{`{"call_id":"c1","tool":"close","arguments":{"ticket":7}}`, `{"call_id":"c2","tool":"escalate","arguments":{"ticket":7}}`} {
			do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"`+r+`","tool_calls":[`+c+`]}`, nil)
		}
	}
	_, out := do(t, "GET", srv.URL+"/v1/deadletters", "", nil)
	ids := []string{fmt.Sprint(path(out, "deadletters", 0, "id")), fmt.Sprint(path(out, "deadletters", 1, "id"))}
	failing.Store(false)
	if status, out := do(t, "POST", srv.URL+"/v1/deadletters/"+ids[0]+"/retry", "", nil); status != 200 || out["status"] != "success" {
		t.Errorf("retrying %s = %d %v", ids[0], status, out)
	}
	if status, out := do(t, "POST", srv.URL+"/v1/deadletters/"+ids[1]+"/dismiss", `{"note":"by hand"}`, nil); status != 200 {
		t.Errorf("dismissing %s = %d %v", ids[1], status, out)
	}
	if n := len(openDeadLetters(t, g)); n != 0 {
		t.Errorf("%d dead letters left", n)
	}
	if status, _ := do(t, "POST", srv.URL+"/v1/deadletters/"+ids[1]+"/dismiss", `{"note":"again"}`, nil); status != http.StatusNotFound {
		t.Errorf("dismissing %s again = %d, want 404", ids[1], status)
	}
}

// A request a restart interrupted stays so, after the restart that
// interrupted it and after a later one (which reads it back from the store):
// a call naming it, through the API or MCP, is refused with
// request_interrupted and a suggestion, nothing runs, ending it never
// answers "completed", and its stored state and cause are kept.
func TestInterruptedRequestThroughGateway(t *testing.T) {
	dir := t.TempDir()
	// The gateway that crashed left "trip" running.
	st, err := sqlite.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutRequest(context.Background(), &store.Request{ID: "trip", Principal: link.LocalPrincipal, Agent: "api",
		State: "running", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, restart := range []string{"interrupting", "later"} {
		g := newTestGateway(t, &config.Config{Data: dir})
		srv := serveTest(t, g)
		status, body := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"trip","tool_calls":[
			{"call_id":"c1","tool":"refund_order","arguments":{"order_id":"1001","amount":5,"reason":"damaged box"}}]}`, nil)
		// Kept by the gateway (the restart that interrupted it restored it,
		// a later one reads it back from the store): the call is refused.
		var code, suggestion string
		results, _ := body["results"].([]any)
		if status == 200 && len(results) == 1 {
			r, _ := results[0].(map[string]any)
			e, _ := r["error"].(map[string]any)
			if r["status"] == "refused" {
				code, _ = e["code"].(string)
				suggestion, _ = e["suggestion"].(string)
			}
		}
		if code != "request_interrupted" || !strings.Contains(suggestion, "new request") {
			t.Errorf("%s restart: a call in trip answered %d %v; want request_interrupted with a suggestion", restart, status, body)
		}
		cs := connectMCP(t, g, nil)
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_order", Arguments: map[string]any{"order_id": "1001"},
			Meta: mcp.Meta{link.MetaRequest: "trip"}})
		text := ""
		if err != nil {
			text = err.Error()
		} else if len(res.Content) == 1 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok && res.IsError {
				text = tc.Text
			}
		}
		if !strings.Contains(text, "Request trip was interrupted") {
			t.Errorf("%s restart: an MCP call in trip got %v, %v; want it refused as interrupted", restart, res, err)
		}
		status, body = do(t, "POST", srv.URL+"/v1/requests/trip/end", "", nil)
		if body["state"] == "completed" || (status == 200 && body["state"] != "interrupted") {
			t.Errorf("%s restart: ending trip answered %d %v", restart, status, body)
		}
		srv.Close()
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st, err = sqlite.Open(context.Background(), dir, &sqlite.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r, err := st.GetRequest(context.Background(), "trip"); err != nil || r.State != "interrupted" || !strings.Contains(string(r.Cause), "restarted") {
		t.Errorf("the stored request: %+v, %v", r, err)
	}
	frames, _ := st.RequestFrames(context.Background(), "trip")
	if len(frames) != 0 {
		t.Errorf("calls ran in the interrupted request: %d checkpoints", len(frames))
	}
}

// TestNewRefusesTwoModels: a built-in tools' model given both in Options
// and in the configuration is refused, not one of them silently dropped.
func TestNewRefusesTwoModels(t *testing.T) {
	cfg := &config.Config{Model: &config.ModelConfig{BaseURL: "http://127.0.0.1:1/v1"}}
	if _, err := New(t.Context(), cfg, &Options{Offline: true, Ephemeral: true, Model: builtin.Scripted{}}); err == nil || !strings.Contains(err.Error(), "Options.Model") {
		t.Errorf("New with two models = %v, want an error naming Options.Model", err)
	}
	g, err := New(t.Context(), cfg, &Options{Offline: true, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
}

// TestDeadLetterRetryRunsTheUndoAsRegistered: a dead letter keeps the
// undo's arguments as its call registered them, secrets included (the
// frame's undo keeps them so, for a restart's compensation): its retry
// runs the undo with them. The gateway masks a checkpoint's arguments;
// masking the dead letter's too had its retry send "[REDACTED]" as the
// password to restore. The API shows them masked.
func TestDeadLetterRetryRunsTheUndoAsRegistered(t *testing.T) {
	g := newTestGateway(t, &config.Config{Data: t.TempDir()})
	var failing atomic.Bool
	restored := make(chan string, 4)
	g.rt.MustRegister(
		reach.Tool{Name: "rotate", Access: reach.Write,
			Undo: &reach.Followup{Tool: "restore", Args: `{"account": "{args.account}", "password": "{args.old_password}"}`},
			Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
				return []byte(`{"ok":true}`), nil
			}},
		reach.Tool{Name: "restore", Access: reach.Write, Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			if failing.Load() {
				return nil, &reach.ToolError{Type: "conflict", Message: "the directory is down"}
			}
			restored <- string(args)
			return []byte(`{"ok":true}`), nil
		}},
		reach.Tool{Name: "notify", Access: reach.Write, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &reach.ToolError{Type: "conflict", Message: "no one to notify"}
		}},
	)
	srv := serveTest(t, g)
	failing.Store(true)
	for _, c := range []string{`{"call_id":"c1","tool":"rotate","arguments":{"account":"ops","old_password":"hunter2hunter2"}}`,
		`{"call_id":"c2","tool":"notify","arguments":{"account":"ops"}}`} {
		if status, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"rot","tool_calls":[`+c+`]}`, nil); status != 200 {
			t.Fatalf("calls: %d %v", status, out)
		}
	}
	open, err := g.store.ListDeadLetters(t.Context(), store.DeadOpen)
	if err != nil || len(open) != 1 || open[0].Tool != "restore" {
		t.Fatalf("open dead letters: %+v (%v), want restore's", open, err)
	}
	shown := func(what, body string) {
		t.Helper()
		if strings.Contains(body, "hunter2") || !strings.Contains(body, `"password":"[REDACTED]"`) {
			t.Errorf("%s shows the dead letter's arguments unmasked: %s", what, body)
		}
	}
	shown("GET /v1/deadletters", getBody(t, g, "/v1/deadletters"))
	failing.Store(false)
	status, out := do(t, "POST", fmt.Sprintf("%s/v1/deadletters/dl-%d/retry", srv.URL, open[0].ID), "", nil)
	if status != 200 || out["status"] != string(reach.StatusSuccess) {
		t.Fatalf("retrying the dead letter = %d %v, want 200 and success", status, out)
	}
	b, _ := json.Marshal(out["deadletter"])
	shown("the retry's answer", string(b))
	select {
	case args := <-restored:
		if !strings.Contains(args, `"password":"hunter2hunter2"`) {
			t.Errorf("the retry ran restore with %s, want the password it registered", args)
		}
	default:
		t.Fatal("the retry did not run restore")
	}
}

// TestDataFolderHeldByOne: a second gateway on a data folder another one
// serves is refused, naming the folder; once the first closes, the folder
// opens. A second gateway used to start, take the first one's running
// requests for ones a restart interrupted, store them so and run their
// undos.
func TestDataFolderHeldByOne(t *testing.T) {
	data := t.TempDir()
	first, err := New(t.Context(), &config.Config{Data: data}, &Options{Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	if g, err := New(t.Context(), &config.Config{Data: data}, &Options{Offline: true}); err == nil {
		g.Close()
		t.Fatal("a second gateway opened a data folder the first one serves")
	} else if !strings.Contains(err.Error(), "the data folder "+data+" is in use by another reach") ||
		!strings.Contains(err.Error(), "data: in its configuration") {
		// What to do holds for reach stdio too, which takes no --data.
		t.Errorf("second gateway: %v", err)
	}
	first.Close()
	again, err := New(t.Context(), &config.Config{Data: data}, &Options{Offline: true})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	again.Close()
}
