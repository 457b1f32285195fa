package approval

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/policy"
)

// fixture is a runtime with the default policies and the queue.
type fixture struct {
	rt     *reach.Runtime
	q      *Queue
	runs   atomic.Int32
	mu     sync.Mutex
	events []string
	keys   []string // ApprovalKey of each call that ran
}

func newFixture(t *testing.T, o *Options) *fixture {
	t.Helper()
	f := &fixture{}
	eng := policy.New(nil)
	if o == nil {
		o = &Options{}
	}
	o.Requires = eng.Requirement
	o.Audit = func(_ context.Context, e Event) {
		f.mu.Lock()
		f.events = append(f.events, e.Action+" "+e.By)
		f.mu.Unlock()
	}
	o.Tool = func(name string) (reach.Tool, bool) { return f.rt.Tool(name) } // f.rt is made below
	f.q = New(o)
	f.rt = reach.New(&reach.Options{Authorizer: eng, Approver: f.q.Approver(), ApprovalKey: f.q.ApprovalKey,
		Middleware: []reach.Middleware{func(next reach.Handler) reach.Handler {
			return func(ctx context.Context, c *reach.Call) (*reach.Result, error) {
				f.mu.Lock()
				f.keys = append(f.keys, f.q.ApprovalKey(c))
				f.mu.Unlock()
				return next(ctx, c)
			}
		}}})
	run := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		f.runs.Add(1)
		return json.RawMessage(`{"ok":true}`), nil
	}
	f.rt.MustRegister(
		reach.Tool{Name: "refund", Description: "Refund an order.\nMore text.", Access: reach.Write,
			Writes: []string{"order:{order_id}"}, Undo: &reach.Followup{Tool: "charge", Args: "{}"}, Func: run},
		reach.Tool{Name: "charge", Access: reach.Write, Func: run},
		reach.Tool{Name: "close_account", Access: reach.HighRisk, Func: run},
	)
	return f
}

func (f *fixture) begin(t *testing.T, principal string, tenant string) context.Context {
	t.Helper()
	ctx, req, err := f.rt.Begin(t.Context(), &reach.RequestOptions{ID: "req_" + principal, Principal: principal, Tenant: tenant, Scene: "support",
		Budget: &reach.Budget{Turns: 100}}) // no wall clock: the tests sleep past it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(req.End)
	return ctx
}

var n atomic.Int64

func (f *fixture) call(ctx context.Context, tool, args string) *reach.Result {
	return f.rt.Call(ctx, &reach.Call{ID: "c" + string(rune('a'+n.Add(1)%26)), Tool: tool, Arguments: json.RawMessage(args), Why: "the customer asked"})
}

var (
	alice = Actor{Principal: "alice"}
	bob   = Actor{Principal: "bob"}
	carol = Actor{Principal: "carol", Roles: []string{"reviewer"}}
)

func TestApproveOnce(t *testing.T) {
	f := newFixture(t, nil)
	ctx := f.begin(t, "alice", "")
	res := f.call(ctx, "refund", `{"order_id":"A1","amount":20}`)
	if res.Status != reach.StatusPending || res.Error.Code != "approval_pending" || res.Error.Type != reach.TypeApproval {
		t.Fatalf("first call: %s %+v", res.Status, res.Error)
	}
	// The same call again (another call id, keys in another order): the same approval.
	res = f.call(ctx, "refund", `{"amount":20,"order_id":"A1"}`)
	if res.Status != reach.StatusPending {
		t.Fatalf("repeat: %s", res.Status)
	}
	list := f.q.List(Pending)
	if len(list) != 1 {
		t.Fatalf("%d pending approvals, want 1", len(list))
	}
	a := list[0]
	if !strings.Contains(res.Error.Message, a.ID) || !strings.Contains(res.Error.Message, "the user alice") {
		t.Errorf("pending message %q", res.Error.Message)
	}
	if a.Operation != "Refund an order." || a.Tool != "refund" || string(a.Arguments) != `{"amount":20,"order_id":"A1"}` ||
		a.Access != reach.Write || !cmp.Equal(a.Writes, []string{"order:A1"}) || a.Undo != "charge" ||
		a.Principal != "alice" || a.Requires != User || a.Why != "the customer asked" || a.Scene != "support" {
		t.Errorf("approval %+v", a)
	}
	for _, want := range []string{"Operation: Refund an order.", `Target:    refund {"amount":20,"order_id":"A1"}`,
		"Impact:    write; writes order:A1; can be undone (charge)", "Asked by:  alice"} {
		if !strings.Contains(a.Prompt(), want) {
			t.Errorf("prompt lacks %q:\n%s", want, a.Prompt())
		}
	}
	// Only the user may approve a write.
	if _, err := f.q.Approve(a.ID, carol, ""); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("a reviewer approved a user approval: %v", err)
	}
	if _, err := f.q.Approve(a.ID, bob, ""); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("bob approved alice's call: %v", err)
	}
	got, err := f.q.Approve(a.ID, alice, "fine")
	if err != nil || got.Status != Approved {
		t.Fatalf("approve: %v %v", got.Status, err)
	}
	if _, err := f.q.Approve(a.ID, alice, ""); !errors.Is(err, ErrDecided) {
		t.Errorf("approved twice: %v", err)
	}
	if f.runs.Load() != 0 {
		t.Fatal("ran before approval")
	}
	res = f.call(ctx, "refund", `{"order_id":"A1","amount":20}`)
	if res.Status != reach.StatusSuccess || f.runs.Load() != 1 {
		t.Fatalf("after approval: %s %v, runs %d", res.Status, res.Error, f.runs.Load())
	}
	if got, _ := f.q.Get(a.ID); got.Status != Used {
		t.Errorf("status %s, want used", got.Status)
	}
	if !cmp.Equal(f.keys, []string{a.ID}) {
		t.Errorf("ApprovalKey as the call ran: %q, want %q", f.keys, a.ID)
	}
	// Once: the agent's retry of the same call gets the recorded result;
	// nothing runs again and no second approval is filed.
	res = f.call(ctx, "refund", `{"order_id":"A1","amount":20}`)
	if res.Status != reach.StatusSuccess || !res.Replayed || f.runs.Load() != 1 {
		t.Fatalf("retry: %s replayed=%v, runs %d", res.Status, res.Replayed, f.runs.Load())
	}
	if again := f.q.List(Pending); len(again) != 0 {
		t.Errorf("a retry filed a new approval: %+v", again)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if diff := cmp.Diff([]string{"requested ", "approved alice", "used "}, f.events); diff != "" {
		t.Errorf("audit (-want +got)\n%s", diff)
	}
}

func TestHighRiskNeedsTwo(t *testing.T) {
	f := newFixture(t, nil)
	ctx := f.begin(t, "alice", "")
	if res := f.call(ctx, "close_account", `{"id":7}`); res.Status != reach.StatusPending ||
		!strings.Contains(res.Error.Message, "the user alice and a reviewer") {
		t.Fatalf("%s %v", res.Status, res.Error)
	}
	a := f.q.List(Pending)[0]
	if a.Requires != UserAndReviewer {
		t.Fatalf("requires %q", a.Requires)
	}
	steps := []struct {
		by     Actor
		err    error
		status Status
	}{
		{alice, nil, Pending},
		{alice, ErrAlreadyVoted, Pending},
		{bob, ErrNotAllowed, Pending},
		{carol, nil, Approved},
	}
	for i, s := range steps {
		got, err := f.q.Approve(a.ID, s.by, "")
		if !errors.Is(err, s.err) || got.Status != s.status {
			t.Fatalf("step %d (%s): %v %s, want %v %s", i, s.by.Principal, err, got.Status, s.err, s.status)
		}
		if s.status == Pending && s.err == nil {
			if res := f.call(ctx, "close_account", `{"id":7}`); res.Status != reach.StatusPending {
				t.Fatalf("ran with one approval: %s", res.Status)
			}
		}
	}
	if res := f.call(ctx, "close_account", `{"id":7}`); res.Status != reach.StatusSuccess || f.runs.Load() != 1 {
		t.Fatalf("%s, runs %d", res.Status, f.runs.Load())
	}
}

// A user who is also a reviewer still needs a second principal.
func TestReviewerOwnRequest(t *testing.T) {
	f := newFixture(t, nil)
	ctx := f.begin(t, "carol", "")
	f.call(ctx, "close_account", `{}`)
	a := f.q.List(Pending)[0]
	if _, err := f.q.Approve(a.ID, carol, ""); err != nil {
		t.Fatal(err)
	}
	if got, err := f.q.Approve(a.ID, carol, ""); !errors.Is(err, ErrAlreadyVoted) || got.Status != Pending {
		t.Errorf("one principal approved twice: %v %s", err, got.Status)
	}
	dave := Actor{Principal: "dave", Roles: []string{"reviewer"}}
	if got, err := f.q.Approve(a.ID, dave, ""); err != nil || got.Status != Approved {
		t.Errorf("second reviewer: %v %s", err, got.Status)
	}
}

func TestDeny(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		ctx := f.begin(t, "alice", "")
		f.call(ctx, "refund", `{"order_id":"A1"}`)
		a := f.q.List(Pending)[0]
		if _, err := f.q.Deny(a.ID, bob, "no"); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("bob denied: %v", err)
		}
		if got, err := f.q.Deny(a.ID, carol, "refunds are frozen"); err != nil || got.Status != Denied {
			t.Fatalf("deny: %v %s", err, got.Status)
		}
		for range 2 {
			res := f.call(ctx, "refund", `{"order_id":"A1"}`)
			if res.Status != reach.StatusRefused || res.Error.Code != "approval_denied" ||
				res.Error.Message != "carol denied refund (approval "+a.ID+"): refunds are frozen." {
				t.Fatalf("after denial: %s %+v", res.Status, res.Error)
			}
		}
		if f.runs.Load() != 0 {
			t.Fatal("a denied call ran")
		}
		// Once the denial's time is over, the call may ask again.
		time.Sleep(15*time.Minute + time.Second)
		if res := f.call(ctx, "refund", `{"order_id":"A1"}`); res.Status != reach.StatusPending {
			t.Errorf("after the denial expired: %s", res.Status)
		}
	})
}

func TestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, &Options{TTL: 10 * time.Minute})
		ctx := f.begin(t, "alice", "")
		f.call(ctx, "refund", `{"order_id":"A1"}`)
		a := f.q.List(Pending)[0]
		time.Sleep(10 * time.Minute)
		if got, _ := f.q.Get(a.ID); got.Status != Expired {
			t.Fatalf("after the TTL: %s", got.Status)
		}
		if _, err := f.q.Approve(a.ID, alice, ""); !errors.Is(err, ErrDecided) {
			t.Errorf("approved an expired approval: %v", err)
		}
		// Through the API, the refusal says what to do next: the agent's
		// next call asks again, and that approval is the one to decide.
		r := httptest.NewRequest("POST", "/v1/approvals/"+a.ID+"/approve", nil)
		r = r.WithContext(auth.WithIdentity(r.Context(), &auth.Identity{Principal: "alice"}))
		w := httptest.NewRecorder()
		f.q.Handler(nil).ServeHTTP(w, r)
		var m struct {
			Error struct{ Code, Message, Suggestion string }
		}
		json.Unmarshal(w.Body.Bytes(), &m)
		if w.Code != 409 || m.Error.Code != "already_decided" || !strings.Contains(m.Error.Message, "expired") || !strings.Contains(m.Error.Suggestion, "a new approval is asked for") {
			t.Errorf("approving an expired approval through the API: %d %s; want 409 already_decided saying what to do next", w.Code, w.Body)
		}
		// An approval whose call does not come back in time expires too.
		f.call(ctx, "refund", `{"order_id":"A1"}`)
		b := f.q.List(Pending)[0]
		if b.ID == a.ID {
			t.Fatal("the expired approval was reused")
		}
		f.q.Approve(b.ID, alice, "")
		time.Sleep(11 * time.Minute)
		if res := f.call(ctx, "refund", `{"order_id":"A1"}`); res.Status != reach.StatusPending || f.runs.Load() != 0 {
			t.Errorf("an expired approval let the call through: %s", res.Status)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		want := []string{"requested ", "expired ", "requested ", "approved alice", "expired ", "requested "}
		if diff := cmp.Diff(want, f.events); diff != "" {
			t.Errorf("audit (-want +got)\n%s", diff)
		}
	})
}

// With Wait, the call is held until a human decides.
func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, &Options{Wait: time.Minute})
		ctx := f.begin(t, "alice", "")
		done := make(chan *reach.Result)
		go func() { done <- f.call(ctx, "refund", `{"order_id":"A1"}`) }()
		synctest.Wait()
		a := f.q.List(Pending)[0]
		time.Sleep(20 * time.Second)
		f.q.Approve(a.ID, alice, "")
		if res := <-done; res.Status != reach.StatusSuccess || f.runs.Load() != 1 {
			t.Errorf("held call: %s %v", res.Status, res.Error)
		}
		// Nobody decides: pending after Wait.
		start := time.Now()
		res := f.call(ctx, "refund", `{"order_id":"B2"}`)
		if res.Status != reach.StatusPending || time.Since(start) != time.Minute {
			t.Errorf("unanswered: %s after %v", res.Status, time.Since(start))
		}
	})
}

func TestTenants(t *testing.T) {
	f := newFixture(t, nil)
	ctx := f.begin(t, "alice", "acme")
	f.call(ctx, "close_account", `{}`)
	a := f.q.List(Pending)[0]
	f.q.Approve(a.ID, Actor{Principal: "alice", Tenant: "acme"}, "")
	if _, err := f.q.Approve(a.ID, Actor{Principal: "rex", Roles: []string{"reviewer"}, Tenant: "globex"}, ""); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("a reviewer of another tenant: %v", err)
	}
	if _, err := f.q.Approve(a.ID, Actor{Principal: "rex", Roles: []string{"reviewer"}}, ""); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("a reviewer without a tenant: %v", err)
	}
	if got, err := f.q.Approve(a.ID, Actor{Principal: "ray", Roles: []string{"reviewer"}, Tenant: "acme"}, ""); err != nil || got.Status != Approved {
		t.Errorf("a reviewer of the tenant: %v %s", err, got.Status)
	}
}

// TestTenantsOwnerIsPrincipalAndTenant: the user who asked is a principal
// in a tenant; the same name in another tenant may not give the user's
// approval, nor see or deny it, whether the request has a tenant or not.
func TestTenantsOwnerIsPrincipalAndTenant(t *testing.T) {
	for _, tenant := range []string{"", "acme"} {
		f := newFixture(t, nil)
		ctx := f.begin(t, "alice", tenant)
		f.call(ctx, "refund", `{"order_id":"A1"}`)
		a := f.q.List(Pending)[0]
		other := Actor{Principal: "alice", Tenant: "globex"}
		if f.q.CanDecide(&a, other) {
			t.Errorf("tenant %q: alice of globex may decide alice's approval", tenant)
		}
		if got, err := f.q.Approve(a.ID, other, ""); !errors.Is(err, ErrNotAllowed) || got.Status != Pending {
			t.Errorf("tenant %q: alice of globex approved alice's refund: %v %s", tenant, err, got.Status)
		}
		if got, err := f.q.Deny(a.ID, other, ""); !errors.Is(err, ErrNotAllowed) || got.Status != Pending {
			t.Errorf("tenant %q: alice of globex denied alice's refund: %v %s", tenant, err, got.Status)
		}
		if got, err := f.q.Approve(a.ID, Actor{Principal: "alice", Tenant: tenant}, ""); err != nil || got.Status != Approved {
			t.Errorf("tenant %q: alice herself: %v %s", tenant, err, got.Status)
		}
	}
	// A reviewer of another tenant with the user's name is neither the user
	// nor a reviewer of a request without a tenant: it decides nothing of
	// it (a request of no tenant is not there for a tenant's principals),
	// and a high-risk call of it still waits for its user after a reviewer
	// of no tenant.
	f := newFixture(t, nil)
	ctx := f.begin(t, "alice", "")
	f.call(ctx, "close_account", `{}`)
	a := f.q.List(Pending)[0]
	other := Actor{Principal: "alice", Tenant: "globex", Roles: []string{"reviewer"}}
	if f.q.CanDecide(&a, other) {
		t.Errorf("alice of globex, a reviewer, may decide alice's approval of no tenant")
	}
	if got, err := f.q.Approve(a.ID, other, ""); !errors.Is(err, ErrNotAllowed) || got.Status != Pending || len(got.Votes) != 0 {
		t.Fatalf("alice of globex, a reviewer: %v %s %+v", err, got.Status, got.Votes)
	}
	if got, err := f.q.Approve(a.ID, Actor{Principal: "carol", Roles: []string{"reviewer"}}, ""); err != nil || got.Status != Pending || got.Votes[0].As != "reviewer" {
		t.Fatalf("carol, a reviewer of no tenant: %v %s %+v", err, got.Status, got.Votes)
	}
	if got, err := f.q.Approve(a.ID, Actor{Principal: "dave", Roles: []string{"reviewer"}}, ""); !errors.Is(err, ErrAlreadyVoted) || got.Status != Pending {
		t.Errorf("a second reviewer stood in for the user: %v %s", err, got.Status)
	}
}

// A sub-agent's identical call shares its root request's approval.
func TestSubRequestSharesApproval(t *testing.T) {
	f := newFixture(t, nil)
	ctx := f.begin(t, "alice", "")
	f.call(ctx, "refund", `{"order_id":"A1"}`)
	mctx, turn, _ := f.rt.BeginModel(ctx, "m")
	defer turn.EndModel(reach.TokenUsage{})
	sctx, sub, err := f.rt.Delegate(mctx, &reach.Delegation{Agent: "helper", Task: "refund"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.End()
	f.call(sctx, "refund", `{"order_id":"A1"}`)
	if n := len(f.q.List("")); n != 1 {
		t.Errorf("%d approvals, want 1", n)
	}
}

func TestHandler(t *testing.T) {
	f := newFixture(t, nil)
	ctx := f.begin(t, "alice", "")
	f.call(ctx, "refund", `{"order_id":"A1"}`)
	f.call(ctx, "close_account", `{"id":1}`)
	bctx := f.begin(t, "bob", "")
	f.call(bctx, "refund", `{"order_id":"B1"}`)
	h := f.q.Handler(nil)
	do := func(method, path string, as *auth.Identity, body string) (int, map[string]any) {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		if as != nil {
			r = r.WithContext(auth.WithIdentity(r.Context(), as))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var m map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
		return w.Code, m
	}
	ids := func(m map[string]any) []string {
		var out []string
		for _, a := range m["approvals"].([]any) {
			out = append(out, a.(map[string]any)["tool"].(string)+"/"+a.(map[string]any)["principal"].(string))
		}
		return out
	}
	aliceID := &auth.Identity{Principal: "alice"}
	carolID := &auth.Identity{Principal: "carol", Roles: []string{"reviewer"}}
	if code, m := do("GET", "/v1/approvals", aliceID, ""); code != 200 || !cmp.Equal(ids(m), []string{"close_account/alice", "refund/alice"}) {
		t.Errorf("alice sees %d %v", code, m)
	}
	if _, m := do("GET", "/v1/approvals?status=pending", carolID, ""); len(ids(m)) != 3 {
		t.Errorf("the reviewer sees %v", ids(m))
	}
	if code, _ := do("GET", "/v1/approvals?status=nope", carolID, ""); code != 400 {
		t.Errorf("bad status: %d", code)
	}
	var refund, closeAcct, bobs string
	for _, a := range f.q.List("") {
		switch a.Tool + "/" + a.Principal {
		case "refund/alice":
			refund = a.ID
		case "close_account/alice":
			closeAcct = a.ID
		case "refund/bob":
			bobs = a.ID
		}
	}
	tests := []struct {
		name, method, path string
		as                 *auth.Identity
		body               string
		code               int
		want               string // error code or status
	}{
		{"get", "GET", "/v1/approvals/" + refund, aliceID, "", 200, "pending"},
		{"someone else's", "GET", "/v1/approvals/" + bobs, aliceID, "", 404, "not_found"},
		{"unknown", "POST", "/v1/approvals/apr_nope/approve", aliceID, "", 404, "not_found"},
		{"anonymous", "POST", "/v1/approvals/" + refund + "/approve", nil, "", 404, "not_found"},
		{"reviewer on a user approval", "POST", "/v1/approvals/" + refund + "/approve", carolID, "", 403, "not_allowed"},
		{"bad body", "POST", "/v1/approvals/" + refund + "/approve", aliceID, `{"reason": 3}`, 400, "bad_body"},
		{"unknown field", "POST", "/v1/approvals/" + refund + "/approve", aliceID, `{"reasn": "x"}`, 400, "bad_body"},
		{"approve", "POST", "/v1/approvals/" + refund + "/approve", aliceID, `{"reason": "ok"}`, 200, "approved"},
		{"approve again", "POST", "/v1/approvals/" + refund + "/approve", aliceID, ``, 409, "already_decided"},
		{"first of two", "POST", "/v1/approvals/" + closeAcct + "/approve", aliceID, ``, 200, "pending"},
		{"twice by the user", "POST", "/v1/approvals/" + closeAcct + "/approve", aliceID, ``, 409, "already_approved"},
		{"deny", "POST", "/v1/approvals/" + closeAcct + "/deny", carolID, `{"reason":"too risky"}`, 200, "denied"},
		{"wrong method", "DELETE", "/v1/approvals/" + refund, aliceID, ``, 405, ""},
		// The mux's own answers are plain text: these are the API's.
		{"wrong method, JSON", "DELETE", "/v1/approvals/" + refund, aliceID, ``, 405, "method_not_allowed"},
		{"list, wrong method", "POST", "/v1/approvals", aliceID, `{}`, 405, "method_not_allowed"},
		{"decide, wrong method", "GET", "/v1/approvals/" + refund + "/approve", aliceID, ``, 405, "method_not_allowed"},
		{"no id", "GET", "/v1/approvals/", aliceID, ``, 404, "not_found"},
		{"too deep", "GET", "/v1/approvals/" + refund + "/approve/x", aliceID, ``, 404, "not_found"},
		{"unknown action", "POST", "/v1/approvals/" + refund + "/frob", aliceID, ``, 404, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			if tt.as != nil {
				r = r.WithContext(auth.WithIdentity(r.Context(), tt.as))
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.code {
				t.Fatalf("got %d %s, want %d", w.Code, w.Body, tt.code)
			}
			if tt.want == "" {
				return
			}
			var m struct {
				Status string
				Prompt string
				Error  struct{ Code string }
			}
			json.Unmarshal(w.Body.Bytes(), &m)
			if m.Status != tt.want && m.Error.Code != tt.want {
				t.Errorf("got %s, want %s", w.Body, tt.want)
			}
			if w.Code == 200 && !strings.HasPrefix(m.Prompt, "Approval apr_") {
				t.Errorf("prompt %q", m.Prompt)
			}
		})
	}
	if res := f.call(ctx, "refund", `{"order_id":"A1"}`); res.Status != reach.StatusSuccess {
		t.Errorf("after approval over HTTP: %s %v", res.Status, res.Error)
	}
	if res := f.call(ctx, "close_account", `{"id":1}`); res.Error == nil || res.Error.Message != "carol denied close_account (approval "+closeAcct+"): too risky." {
		t.Errorf("after denial over HTTP: %s %v", res.Status, res.Error)
	}
}

func TestRedactedArguments(t *testing.T) {
	f := newFixture(t, &Options{Redactor: redactAll{}})
	ctx := f.begin(t, "alice", "")
	f.call(ctx, "refund", `{"order_id":"A1"}`)
	a := f.q.List("")[0]
	if string(a.Arguments) != `{"redacted":true}` {
		t.Errorf("arguments %s", a.Arguments)
	}
	// What is filled from the arguments, and the agent's reason, too.
	if !cmp.Equal(a.Writes, []string{"[redacted]"}) || a.Why != "[redacted]" {
		t.Errorf("writes %q, why %q: want them redacted", a.Writes, a.Why)
	}
}

type redactAll struct{}

func (redactAll) Redact([]byte) []byte       { return []byte(`{"redacted":true}`) }
func (redactAll) RedactString(string) string { return "[redacted]" }

// Identical calls arriving together share one approval (run with -race).
func TestConcurrentIdenticalCalls(t *testing.T) {
	f := newFixture(t, nil)
	ctx := f.begin(t, "alice", "")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if res := f.call(ctx, "refund", `{"order_id":"A1"}`); res.Status != reach.StatusPending {
				t.Errorf("%s", res.Status)
			}
		})
	}
	wg.Wait()
	if n := len(f.q.List("")); n != 1 {
		t.Errorf("%d approvals, want 1", n)
	}
}

// TestApprovalRunsOnceWhateverTheKeys: a caller that sends a new
// idempotency key with every retry of an approved call still gets one run.
func TestApprovalRunsOnceWhateverTheKeys(t *testing.T) {
	f := newFixture(t, nil)
	ctx := f.begin(t, "alice", "")
	call := func(key string) *reach.Result {
		return f.rt.Call(ctx, &reach.Call{ID: "k-" + key, Tool: "refund", Arguments: json.RawMessage(`{"order_id":"A9","amount":5}`), IdempotencyKey: key})
	}
	if res := call("k0"); res.Status != reach.StatusPending {
		t.Fatalf("first call: %s", res.Status)
	}
	a := f.q.List(Pending)[0]
	if _, err := f.q.Approve(a.ID, alice, ""); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"k1", "k2", "k3"} {
		if res := call(k); res.Status != reach.StatusSuccess {
			t.Errorf("call with key %s: %s %+v", k, res.Status, res.Error)
		}
	}
	if n := f.runs.Load(); n != 1 {
		t.Errorf("the approved refund ran %d times; one approval lets one run through", n)
	}
}

// TestReusedRequestIDMeetsNoOnesApproval: after alice's request ended,
// mallory beginning a request with the same id and making the same call
// neither uses alice's approval nor gets its recorded result.
func TestReusedRequestIDMeetsNoOnesApproval(t *testing.T) {
	f := newFixture(t, nil)
	begin := func(principal string) (context.Context, *reach.Request) {
		ctx, req, err := f.rt.Begin(t.Context(), &reach.RequestOptions{ID: "shared-id", Principal: principal, Budget: &reach.Budget{Turns: 100}})
		if err != nil {
			t.Fatal(err)
		}
		return ctx, req
	}
	call := func(ctx context.Context) *reach.Result {
		return f.rt.Call(ctx, &reach.Call{ID: "c1", Tool: "refund", Arguments: json.RawMessage(`{"order_id":"A7","amount":5}`)})
	}
	ctx, req := begin("alice")
	call(ctx)
	if _, err := f.q.Approve(f.q.List(Pending)[0].ID, alice, ""); err != nil {
		t.Fatal(err)
	}
	if res := call(ctx); res.Status != reach.StatusSuccess || f.runs.Load() != 1 {
		t.Fatalf("alice's approved call: %s, runs %d", res.Status, f.runs.Load())
	}
	req.End()
	ctx, req = begin("mallory")
	defer req.End()
	if res := call(ctx); res.Status != reach.StatusPending || res.Replayed || f.runs.Load() != 1 {
		t.Errorf("mallory's call under alice's old request id: %s replayed=%v, runs %d; want it pending its own approval", res.Status, res.Replayed, f.runs.Load())
	}
}

// TestReleaseAnswersHeldCalls: a gateway that shuts down while a call is
// held for a decision (Wait) answered nothing: its server closed the
// connection after its grace period, and the client got an empty reply.
// Release answers a held call as pending at once, and one that comes
// after it too; the approval stays pending.
func TestReleaseAnswersHeldCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, &Options{Wait: time.Hour})
		ctx := f.begin(t, "alice", "")
		done := make(chan *reach.Result)
		start := time.Now()
		go func() { done <- f.call(ctx, "refund", `{"order_id":"A1"}`) }()
		synctest.Wait()
		f.q.Release()
		if res := <-done; res.Status != reach.StatusPending || time.Since(start) != 0 {
			t.Errorf("held call after Release: %s after %v, want pending at once", res.Status, time.Since(start))
		}
		if res := f.call(ctx, "refund", `{"order_id":"B2"}`); res.Status != reach.StatusPending || time.Since(start) != 0 {
			t.Errorf("a call after Release: %s after %v, want pending at once", res.Status, time.Since(start))
		}
		if n := len(f.q.List(Pending)); n != 2 || f.runs.Load() != 0 {
			t.Errorf("%d approvals pending and %d runs after Release, want 2 and none", n, f.runs.Load())
		}
	})
}
