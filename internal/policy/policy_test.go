package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentreach/reach"
)

// The example policies of default.cedar, uncommented.
const argumentRule = `
@id("support-own-department")
@reason("support agents may read orders of their own department only")
forbid (principal, action == Reach::Action::"call", resource == Reach::Tool::"get_order")
when { principal.roles.contains("support") }
unless {
  principal has department &&
  context.arguments has department &&
  context.arguments.department == principal.department
};
`

const sceneRule = `
@id("chitchat-read-only")
@reason("no write or high-risk tools in small talk")
forbid (principal, action, resource)
when {
  context.scene == "chitchat" &&
  (resource.access == "write" || resource.access == "high_risk")
};
`

func mustParse(t testing.TB, texts ...string) *Set {
	t.Helper()
	var srcs []Source
	for i, txt := range texts {
		srcs = append(srcs, Source{Name: fmt.Sprintf("p%d.cedar", i), Text: []byte(txt)})
	}
	s, err := Parse(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var (
	alice   = Principal{ID: "alice", Roles: []string{"support"}, Attributes: map[string]string{"department": "sales"}}
	nobody  = Principal{ID: "anonymous"}
	noDept  = Principal{ID: "bob", Roles: []string{"support"}}
	manager = Principal{ID: "carol", Roles: []string{"manager"}}
)

func TestEvaluate(t *testing.T) {
	set := mustParse(t, string(DefaultSource()), argumentRule, sceneRule)
	tests := []struct {
		name string
		in   Input
		want reach.Decision
		appr string
	}{
		{"read, authenticated", Input{Principal: manager, Tool: "search_kb", Access: reach.Read}, reach.Permit, ""},
		{"read, anonymous", Input{Principal: nobody, Tool: "search_kb", Access: reach.Read}, reach.Deny, ""},
		{"an attribute cannot claim authentication", Input{Principal: Principal{ID: "anonymous", Attributes: map[string]string{"authenticated": "true", "roles": "admin"}}, Tool: "search_kb"}, reach.Deny, ""},
		{"empty access is read", Input{Principal: manager, Tool: "search_kb"}, reach.Permit, ""},
		{"write needs the user", Input{Principal: manager, Tool: "refund", Access: reach.Write}, reach.NeedsApproval, "user"},
		{"high risk needs a reviewer too", Input{Principal: manager, Tool: "delete_account", Access: reach.HighRisk}, reach.NeedsApproval, "user+reviewer"},
		{"forbidden never", Input{Principal: manager, Tool: "drop_db", Access: reach.Forbidden}, reach.Deny, ""},
		{"argument rule: own department", Input{Principal: alice, Tool: "get_order", Arguments: json.RawMessage(`{"department":"sales","id":7}`)}, reach.Permit, ""},
		{"argument rule: other department", Input{Principal: alice, Tool: "get_order", Arguments: json.RawMessage(`{"department":"hr","id":7}`)}, reach.Deny, ""},
		{"argument rule: no department argument", Input{Principal: alice, Tool: "get_order", Arguments: json.RawMessage(`{"id":7}`)}, reach.Deny, ""},
		{"argument rule: principal without department", Input{Principal: noDept, Tool: "get_order", Arguments: json.RawMessage(`{"department":"sales"}`)}, reach.Deny, ""},
		{"argument rule: not support", Input{Principal: manager, Tool: "get_order", Arguments: json.RawMessage(`{"department":"hr"}`)}, reach.Permit, ""},
		{"argument rule: null is absent", Input{Principal: alice, Tool: "get_order", Arguments: json.RawMessage(`{"department":null}`)}, reach.Deny, ""},
		{"scene rule: write in chitchat", Input{Principal: manager, Tool: "refund", Access: reach.Write, Scene: "chitchat"}, reach.Deny, ""},
		{"scene rule: high risk in chitchat", Input{Principal: manager, Tool: "wipe", Access: reach.HighRisk, Scene: "chitchat"}, reach.Deny, ""},
		{"scene rule: read in chitchat", Input{Principal: manager, Tool: "search_kb", Scene: "chitchat"}, reach.Permit, ""},
		{"scene rule: write elsewhere", Input{Principal: manager, Tool: "refund", Access: reach.Write, Scene: "support"}, reach.NeedsApproval, "user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := set.Evaluate(&tt.in)
			if got.Decision != tt.want || got.Approval != tt.appr || len(got.Errors) > 0 {
				t.Errorf("got %v %q (policies %v, errors %v), want %v %q", got.Decision, got.Approval, got.Policies, got.Errors, tt.want, tt.appr)
			}
		})
	}
}

func TestEvaluateReasons(t *testing.T) {
	set := mustParse(t, string(DefaultSource()), sceneRule)
	got := set.Evaluate(&Input{Principal: manager, Tool: "refund", Access: reach.Write, Scene: "chitchat"})
	want := Result{Decision: reach.Deny, Policies: []string{"chitchat-read-only"}, Reason: "no write or high-risk tools in small talk"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// Cedar skips a forbid whose condition errors; here any error denies.
func TestErrorsDeny(t *testing.T) {
	tests := []struct {
		name, policy string
		args         string
	}{
		{"forbid on a missing attribute", `forbid (principal, action, resource) when { context.arguments.amount > 100 };`, `{}`},
		{"forbid on a type mismatch", `forbid (principal, action, resource) when { context.arguments.amount > 100 };`, `{"amount":"lots"}`},
		{"permit on a missing principal attribute", `permit (principal, action, resource) when { principal.department == "x" };`, `{}`},
		{"decimal compared as a long", `forbid (principal, action, resource) when { context.arguments.amount < 5 };`, `{"amount":12.5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := mustParse(t, `permit (principal, action, resource);`, tt.policy)
			got := set.Evaluate(&Input{Principal: manager, Tool: "pay", Arguments: json.RawMessage(tt.args)})
			if got.Decision != reach.Deny || len(got.Errors) == 0 {
				t.Errorf("got %v with errors %v, want a denial with errors", got.Decision, got.Errors)
			}
		})
	}
}

func TestDefaultDeny(t *testing.T) {
	set := mustParse(t, `permit (principal, action, resource == Reach::Tool::"only_this");`)
	if got := set.Evaluate(&Input{Principal: manager, Tool: "other"}); got.Decision != reach.Deny {
		t.Errorf("got %v, want deny", got.Decision)
	}
	if got := set.Evaluate(&Input{Principal: manager, Tool: "only_this"}); got.Decision != reach.Permit {
		t.Errorf("got %v, want permit", got.Decision)
	}
	empty := mustParse(t)
	if got := empty.Evaluate(&Input{Principal: manager, Tool: "x"}); got.Decision != reach.Deny {
		t.Errorf("empty set: got %v, want deny", got.Decision)
	}
}

func TestStrictestApprovalWins(t *testing.T) {
	set := mustParse(t, `
@approval("user") permit (principal, action, resource);
permit (principal, action, resource == Reach::Tool::"t");
@approval("user+reviewer") permit (principal in Reach::Role::"intern", action, resource);
`)
	if got := set.Evaluate(&Input{Principal: manager, Tool: "t"}); got.Approval != ApprovalUser {
		t.Errorf("got %q, want user", got.Approval)
	}
	intern := Principal{ID: "ian", Roles: []string{"intern"}}
	if got := set.Evaluate(&Input{Principal: intern, Tool: "t"}); got.Approval != ApprovalUserReviewer {
		t.Errorf("got %q, want user+reviewer", got.Approval)
	}
}

func TestEntities(t *testing.T) {
	set := mustParse(t, `
permit (principal == Reach::Principal::"alice", action == Reach::Action::"call", resource in Reach::Upstream::"github")
when {
  principal.id == "alice" && principal.tenant == "acme" && principal.roles.contains("support") &&
  principal in Reach::Role::"support" &&
  resource.name == "github__create_issue" && resource.upstream == "github" && resource.access == "write" &&
  resource.tags.contains("issues") &&
  context.scene == "triage" && context.request_id == "req_1" && context.agent == "main" && context.depth == 2 &&
  context.arguments.n == 3 && context.arguments.price == decimal("9.99") &&
  context.arguments.labels.contains("bug") && context.arguments.nested.ok
};`)
	p := Principal{ID: "alice", Roles: []string{"support"}, Tenant: "acme"}
	in := Input{Principal: p, Tool: "github__create_issue", Access: reach.Write, Tags: []string{"issues"},
		Arguments: json.RawMessage(`{"labels":["bug","ui"],"n":3.0,"nested":{"ok":true},"price":9.99}`),
		Scene:     "triage", RequestID: "req_1", Agent: "main", Depth: 2}
	if got := set.Evaluate(&in); got.Decision != reach.Permit {
		t.Errorf("got %+v, want permit", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"syntax", `permit (principal, action, resource`, "p0.cedar"},
		{"bad approval", `@approval("boss") permit (principal, action, resource);`, `@approval("boss")`},
		{"approval on forbid", `@approval("user") forbid (principal, action, resource);`, "forbid"},
		{"duplicate id", `@id("a") permit (principal, action, resource); @id("a") permit (principal, action, resource);`, `"a" is already defined`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(Source{Name: "p0.cedar", Text: []byte(tt.src)})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestIndex(t *testing.T) {
	set := mustParse(t, `
@id("one") permit (principal, action, resource == Reach::Tool::"a");
@id("up") permit (principal, action, resource in Reach::Upstream::"gh");
@id("any") permit (principal, action, resource);
@id("typed") permit (principal, action, resource is Reach::Tool);
@id("never-action") permit (principal, action == Action::"call", resource);
@id("never-type") permit (principal, action, resource == Tool::"a");
`)
	var ids []string
	for id := range set.applicable("gh__a", "gh").All() {
		ids = append(ids, string(id))
	}
	if diff := cmp.Diff([]string{"up", "any", "typed"}, ids); diff != "" {
		t.Errorf("gh__a (-want +got)\n%s", diff)
	}
	ids = nil
	for id := range set.applicable("a", "").All() {
		ids = append(ids, string(id))
	}
	if diff := cmp.Diff([]string{"one", "any", "typed"}, ids); diff != "" {
		t.Errorf("a (-want +got)\n%s", diff)
	}
	if w := set.Warnings(); len(w) != 2 {
		t.Errorf("warnings %q, want two", w)
	}
}

func TestVisible(t *testing.T) {
	eng := New(&Options{Policies: mustParse(t, string(DefaultSource()), argumentRule, sceneRule, `
@id("depth-limit") forbid (principal, action, resource == Reach::Tool::"deep") when { context.depth > 3 };
@id("arg-permit") permit (principal, action, resource == Reach::Tool::"special") when { context.arguments.ok == true };
`)})
	tests := []struct {
		name  string
		p     Principal
		scene string
		tool  reach.Tool
		want  bool
	}{
		{"read", manager, "", reach.Tool{Name: "search_kb"}, true},
		{"anonymous", nobody, "", reach.Tool{Name: "search_kb"}, false},
		{"write needs approval but is visible", manager, "", reach.Tool{Name: "refund", Access: reach.Write}, true},
		{"write in chitchat", manager, "chitchat", reach.Tool{Name: "refund", Access: reach.Write}, false},
		{"read in chitchat", manager, "chitchat", reach.Tool{Name: "search_kb"}, true},
		{"forbidden", manager, "", reach.Tool{Name: "drop", Access: reach.Forbidden}, false},
		{"argument forbid may not apply", alice, "", reach.Tool{Name: "get_order"}, true},
		{"depth forbid may not apply", manager, "", reach.Tool{Name: "deep"}, true},
		{"argument permit may apply", nobody, "", reach.Tool{Name: "special", Access: reach.Forbidden}, false},
		{"argument permit may apply, not forbidden", nobody, "", reach.Tool{Name: "special", Access: reach.Write}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // the second answer comes from the cache
				if got := eng.Visible(tt.p, tt.scene, tt.tool); got != tt.want {
					t.Errorf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestFilter(t *testing.T) {
	eng := New(&Options{Policies: mustParse(t, string(DefaultSource()), sceneRule), MaxVisible: 3})
	var tools []reach.Tool
	for i := range 6 {
		access := reach.Read
		if i%2 == 1 {
			access = reach.Write
		}
		tools = append(tools, reach.Tool{Name: fmt.Sprintf("t%d", i), Access: access, Tags: []string{fmt.Sprintf("g%d", i%3)}})
	}
	names := func(ts []reach.Tool) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"t0", "t1", "t2"}, names(eng.Filter(manager, "", tools, nil))); diff != "" {
		t.Errorf("capped (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"t0", "t2", "t4"}, names(eng.Filter(manager, "chitchat", tools, nil))); diff != "" {
		t.Errorf("chitchat (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"t1", "t4"}, names(eng.Filter(manager, "", tools, &FilterOptions{Tags: []string{"g1"}}))); diff != "" {
		t.Errorf("tags (-want +got)\n%s", diff)
	}
}

func noop(context.Context, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`{"ok":true}`), nil
}

// Through the runtime: the engine as its Authorizer.
func TestAuthorizeThroughRuntime(t *testing.T) {
	var rt *reach.Runtime
	eng := New(&Options{Policies: mustParse(t, string(DefaultSource()), argumentRule, sceneRule, `
@id("no-exports") @reason("exports are off") forbid (principal, action, resource == Reach::Tool::"export_orders");
@id("broken") forbid (principal, action, resource == Reach::Tool::"broken") when { context.arguments.x.y == 1 };
forbid (principal, action, resource == Reach::Tool::"purge_orders");
@id("no-refunds") @reason("returns are off") forbid (principal, action, resource == Reach::Tool::"shop__return");
`), Tools: func() []reach.Tool { return rt.Tools() }})
	rt = reach.New(&reach.Options{Authorizer: eng})
	rt.MustRegister(
		reach.Tool{Name: "get_order", Tags: []string{"orders"}, Func: noop},
		reach.Tool{Name: "search_orders", Tags: []string{"orders"}, Func: noop},
		reach.Tool{Name: "export_orders", Tags: []string{"orders"}, Func: noop},
		reach.Tool{Name: "delete_orders", Tags: []string{"orders"}, Access: reach.Forbidden, Func: noop},
		reach.Tool{Name: "purge_orders", Tags: []string{"orders"}, Func: noop},
		reach.Tool{Name: "refund", Access: reach.Write, Tags: []string{"payments"}, Func: noop},
		reach.Tool{Name: "broken", Func: noop},
		// An upstream's tools, each tagged with it as the gateway tags them.
		reach.Tool{Name: "shop__return", Access: reach.Write, Tags: []string{UpstreamTag + "shop"}, Func: noop},
		reach.Tool{Name: "shop__return_status", Tags: []string{UpstreamTag + "shop"}, Func: noop},
		reach.Tool{Name: "shop__lookup", Tags: []string{UpstreamTag + "shop"}, Func: noop},
	)
	begin := func(o *reach.RequestOptions) context.Context {
		ctx, req, err := rt.Begin(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(req.End)
		return ctx
	}
	support := &reach.RequestOptions{Principal: "alice", Roles: []string{"support"}, Attributes: map[string]string{"department": "sales"}}
	tests := []struct {
		name   string
		req    *reach.RequestOptions
		tool   string
		args   string
		status reach.Status
		code   string
		alts   []string
		msg    string
	}{
		{"own department", support, "get_order", `{"department":"sales"}`, reach.StatusSuccess, "", nil, ""},
		{"other department", support, "get_order", `{"department":"hr"}`, reach.StatusRefused, "denied", []string{"search_orders"},
			"You may not call get_order: support agents may read orders of their own department only."},
		{"forbid with reason", support, "export_orders", `{}`, reach.StatusRefused, "denied", []string{"search_orders", "get_order"},
			"You may not call export_orders: exports are off."},
		{"anonymous", nil, "search_orders", `{}`, reach.StatusRefused, "denied", nil, "You may not call search_orders: no policy permits it."},
		{"forbid without reason", support, "purge_orders", `{}`, reach.StatusRefused, "denied", []string{"search_orders", "get_order"},
			"You may not call purge_orders: a policy forbids it."},
		// The upstream's tag is no shared purpose: its other reads are no
		// alternative to a refund, unless their names say so.
		{"an upstream's tool", support, "shop__return", `{}`, reach.StatusRefused, "denied", []string{"shop__return_status"},
			"You may not call shop__return: returns are off."},
		{"write, no approver", support, "refund", `{}`, reach.StatusRefused, "approval_required", nil, ""},
		{"write in chitchat", &reach.RequestOptions{Principal: "alice", Scene: "chitchat"}, "refund", `{}`, reach.StatusRefused, "denied", nil,
			"You may not call refund: no write or high-risk tools in small talk."},
		{"escaped member name", support, "get_order", `{"dep\u0061rtment":"hr"}`, reach.StatusRefused, "denied", []string{"search_orders"},
			"You may not call get_order: support agents may read orders of their own department only."},
		// The runtime's argument normalization decodes escapes, so the
		// duplicate is refused before any policy runs.
		{"the same member twice, once escaped", support, "get_order", `{"department":"sales","dep\u0061rtment":"hr"}`, reach.StatusRefused, "invalid_arguments", nil,
			"The arguments of get_order are not valid JSON: invalid JSON at byte 40: duplicate key \"dep\\u0061rtment\"."},
		{"evaluation error", support, "broken", `{"x":{}}`, reach.StatusRefused, "denied", nil,
			"You may not call broken: a policy could not be evaluated for this call."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := begin(tt.req)
			res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: tt.tool, Arguments: json.RawMessage(tt.args)})
			if res.Status != tt.status {
				t.Fatalf("status %s (%v), want %s", res.Status, res.Error, tt.status)
			}
			if tt.code == "" {
				return
			}
			if res.Error.Code != tt.code || res.Error.Type == "" {
				t.Errorf("error %+v, want code %s", res.Error, tt.code)
			}
			if tt.msg != "" && res.Error.Message != tt.msg {
				t.Errorf("message %q, want %q", res.Error.Message, tt.msg)
			}
			if tt.code == "denied" && !slices.Equal(res.Error.Alternatives, tt.alts) {
				t.Errorf("alternatives %q, want %q", res.Error.Alternatives, tt.alts)
			}
			if tt.code == "denied" && !strings.Contains(res.Error.Suggestion, "request access") {
				t.Errorf("suggestion %q does not say how to get access", res.Error.Suggestion)
			}
		})
	}
}

func TestRequirement(t *testing.T) {
	eng := New(nil)
	var got []string
	rt := reach.New(&reach.Options{Authorizer: eng, Approver: approverFunc(func(ctx context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
		got = append(got, eng.Requirement(ctx, c))
		return reach.Permit, nil
	})})
	rt.MustRegister(reach.Tool{Name: "w", Access: reach.Write, Func: noop}, reach.Tool{Name: "h", Access: reach.HighRisk, Func: noop})
	ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{Principal: "alice"})
	defer req.End()
	rt.Call(ctx, &reach.Call{ID: "1", Tool: "w"})
	rt.Call(ctx, &reach.Call{ID: "2", Tool: "h"})
	if diff := cmp.Diff([]string{"user", "user+reviewer"}, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

type approverFunc func(context.Context, *reach.Call) (reach.Decision, *reach.Error)

func (f approverFunc) Approve(ctx context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
	return f(ctx, c)
}

func TestDefaultPolicies(t *testing.T) {
	if Default().Len() != 5 || len(Default().Warnings()) != 0 {
		t.Errorf("default set: %v, warnings %v", Default().IDs(), Default().Warnings())
	}
	// The commented examples parse too.
	src := string(DefaultSource())
	var ex []string
	for _, line := range strings.Split(src[strings.Index(src, "// Example"):], "\n") {
		if l, ok := strings.CutPrefix(line, "// "); ok && !strings.HasPrefix(l, "Example") {
			ex = append(ex, l)
		}
	}
	s, err := Parse(Source{Name: "examples", Text: []byte(strings.Join(ex, "\n"))})
	if err != nil {
		t.Fatalf("the commented examples do not parse: %v\n%s", err, strings.Join(ex, "\n"))
	}
	if s.Len() != 3 {
		t.Errorf("examples: %v", s.IDs())
	}
	path := filepath.Join(t.TempDir(), "policies.cedar")
	if err := WriteDefault(path); err != nil {
		t.Fatal(err)
	}
	if err := WriteDefault(path); err == nil {
		t.Error("WriteDefault overwrote a file")
	}
	if b, _ := os.ReadFile(path); string(b) != string(DefaultSource()) {
		t.Error("written file differs")
	}
}

func TestContextUse(t *testing.T) {
	tests := []struct {
		policy  string
		ctx     members
		fields  []string
		allArgs bool
	}{
		{`permit (principal, action, resource);`, 0, nil, false},
		{`permit (principal, action, resource) when { context.scene == "x" && context has depth };`, mScene | mDepth, nil, false},
		{`permit (principal, action, resource) when { context.arguments.a == 1 && context.arguments has b && context.arguments.a.c == 2 };`, mArguments, []string{"a", "b"}, false},
		{`permit (principal, action, resource) when { context.arguments["a"] == 1 };`, mArguments, []string{"a"}, false},
		{`permit (principal, action, resource) when { context has arguments };`, mArguments, nil, false},
		{`permit (principal, action, resource) when { context.arguments == {} };`, mArguments, nil, true},
		{`permit (principal, action, resource) when { context == {} };`, mAll, nil, true},
		{`permit (principal, action, resource) when { context.nope == 1 };`, 0, nil, false},
	}
	for _, tt := range tests {
		set := mustParse(t, tt.policy)
		e := set.entries[0]
		if e.ctx != tt.ctx || !slices.Equal(e.argFields, tt.fields) || e.allArgs != tt.allArgs {
			t.Errorf("%s: got %05b %q %v, want %05b %q %v", tt.policy, e.ctx, e.argFields, e.allArgs, tt.ctx, tt.fields, tt.allArgs)
		}
	}
}

// A policy reading the whole arguments sees them all.
func TestWholeArguments(t *testing.T) {
	eng := New(&Options{Policies: mustParse(t, `permit (principal, action, resource) when { context.arguments == {"a": 1, "b": "x"} && context == {"arguments": {"a": 1, "b": "x"}, "scene": "s", "request_id": "r", "agent": "main", "depth": 1, "tenant": ""} };`)})
	rt := reach.New(&reach.Options{Authorizer: eng})
	rt.MustRegister(reach.Tool{Name: "t", Func: noop})
	ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r", Principal: "p", Scene: "s"})
	defer req.End()
	if res := rt.Call(ctx, &reach.Call{ID: "1", Tool: "t", Arguments: json.RawMessage(`{"b":"x","a":1}`)}); res.IsError() {
		t.Errorf("got %v", res.Error)
	}
}

// Decisions run while the policies are replaced (run with -race).
func TestConcurrentReplace(t *testing.T) {
	eng := New(nil)
	// Its callers go on after any number of denials in a row, which
	// would stop their requests (Options.RefusedInARow): this test is the
	// engine's, under replacement.
	rt := reach.New(&reach.Options{Authorizer: eng, RefusedInARow: -1})
	rt.MustRegister(reach.Tool{Name: "t", Func: noop})
	sets := []*Set{Default(), mustParse(t, permitNone)}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{Principal: fmt.Sprint("p", g)})
			defer req.End()
			for i := range 200 {
				res := rt.Call(ctx, &reach.Call{ID: fmt.Sprint(i), Tool: "t", Arguments: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
				if res.Status != reach.StatusSuccess && res.Error.Code != "denied" {
					t.Errorf("%s %v", res.Status, res.Error)
					return
				}
			}
		})
	}
	for i := range 100 {
		eng.Replace(sets[i%2])
	}
	wg.Wait()
}

// TestAttributeTypos: a policy that reads an attribute no resource or
// context has (an error whenever it is evaluated, so every call it is
// evaluated for is denied) or tests one with has (never true) is warned
// about, naming the attribute meant; the attributes reach gives, the
// principal's (open) and the arguments' fields are not.
func TestAttributeTypos(t *testing.T) {
	set := mustParse(t, `
@id("typo") permit (principal, action, resource) when { resource.acess == "read" };
@id("ctx") forbid (principal, action, resource) when { context has scen && context.colour == "x" };
@id("fine") permit (principal, action, resource) when {
  resource.access == "read" && resource has tags && resource.tags.contains("x") &&
  resource.name like "gh__*" && resource.upstream == "gh" &&
  context.scene == "s" && context.depth < 3 && context.agent == "a" && context.request_id != "" &&
  context.arguments has anything && context.arguments.anything == 1 &&
  principal.department == "d" && principal has whatever
};
`)
	w := set.Warnings()
	want := []string{
		`typo) reads resource.acess, an attribute no tool, resource or prompt has (did you mean access?): evaluating it is an error`,
		`ctx) reads context has scen, an attribute no call's context has (did you mean scene?): the test is never true`,
		`ctx) reads context.colour, an attribute no call's context has: evaluating it is an error`,
	}
	if len(w) != len(want) {
		t.Fatalf("warnings %q, want %d", w, len(want))
	}
	for i := range want {
		if !strings.Contains(w[i], want[i]) {
			t.Errorf("warning %d = %q, want it to contain %q", i, w[i], want[i])
		}
	}
	if d := Default().Warnings(); len(d) != 0 {
		t.Errorf("the shipped policies warn: %q", d)
	}
}

// TestUpstreamOfATaggedTool: a tool tagged with its upstream
// (upstream:<name>, as the gateway tags each) is a member of that upstream
// whatever its name spells: a bare name, another prefix, or the prefix of
// another upstream; its upstream attribute says the same. A tool tagged
// with none is a member of its name's prefix, as before.
func TestUpstreamOfATaggedTool(t *testing.T) {
	set := mustParse(t, `
@id("all") permit (principal, action, resource);
@id("docs-closed") forbid (principal, action, resource in Reach::Upstream::"docs");
@id("wiki-attr") forbid (principal, action, resource) when { resource.upstream == "wiki" };
`)
	alice := Principal{ID: "alice"}
	for _, tc := range []struct {
		tool string
		tags []string
		want reach.Decision
	}{
		{"search", []string{"upstream:docs"}, reach.Deny},
		{"d__search", []string{"x", "upstream:docs"}, reach.Deny},
		{"docs__search", []string{"upstream:other"}, reach.Permit},
		{"docs__search", nil, reach.Deny},
		{"search", nil, reach.Permit},
		{"w__page", []string{"upstream:wiki"}, reach.Deny},
		{"wiki__page", []string{"upstream:other"}, reach.Permit},
	} {
		if got := set.Evaluate(&Input{Principal: alice, Tool: tc.tool, Tags: tc.tags}).Decision; got != tc.want {
			t.Errorf("%s tagged %q: %v, want %v", tc.tool, tc.tags, got, tc.want)
		}
	}
}

// TestLoadMissingSaysWhatToDo: a policy path that does not exist is an
// error that says so and what to do; it said "stat PATH: no such file or
// directory" alone.
func TestLoadMissingSaysWhatToDo(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "policies")
	_, err := Load(missing)
	_, werr := NewWatcher(New(nil), missing, nil) // what reach serve and validate load with
	for _, err := range []error{err, werr} {
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("loading %s = %v, want a not-exist error", missing, err)
		}
		for _, want := range []string{missing + " does not exist", "a .cedar file", "leave policy out"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("loading %s = %v, want it to say %q", missing, err, want)
			}
		}
	}
}

// A policy error never lowers who must approve: when evaluating the
// policies again to learn who must approve fails (an @approval permit's
// condition errors for these arguments, or a reload since the call was
// authorized denies it), the answer is the strictest, and the log says why
// without the arguments.
func TestRequirementFailsClosed(t *testing.T) {
	const asked = `@approval("user") permit (principal, action, resource);`
	tests := []struct {
		name, reloaded string
	}{
		// The arguments' amount overflows: Cedar's error quotes it.
		{"evaluation error", `@approval("user") permit (principal, action, resource) when { context.arguments.amount + 9223372036854775000 > 0 };`},
		{"missing attribute", `@approval("user") permit (principal, action, resource) when { context.arguments.nothing == 1 };`},
		{"denied after a reload", `@approval("user") permit (principal, action, resource == Reach::Tool::"other");`},
		{"forbidden after a reload", asked + "\n" + `forbid (principal, action, resource);`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			eng := New(&Options{Policies: mustParse(t, asked), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			var got []string
			rt := reach.New(&reach.Options{Authorizer: eng, Approver: approverFunc(func(ctx context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
				// The policies change between Authorize and the question of
				// who must approve.
				eng.Replace(mustParse(t, tt.reloaded))
				got = append(got, eng.Requirement(ctx, c))
				return reach.Permit, nil
			})})
			rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Func: noop})
			ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{Principal: "alice"})
			defer req.End()
			rt.Call(ctx, &reach.Call{ID: "1", Tool: "pay", Arguments: json.RawMessage(`{"amount":4711,"note":"card-0042"}`)})
			if diff := cmp.Diff([]string{ApprovalUserReviewer}, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			l := logs.String()
			if !strings.Contains(l, "level=WARN") || !strings.Contains(l, "tool=pay") || !strings.Contains(l, "request="+req.ID()) {
				t.Errorf("log %q: want a warning naming the tool and the request", l)
			}
			if strings.Contains(l, "4711") || strings.Contains(l, "card-0042") {
				t.Errorf("log %q quotes the arguments", l)
			}
		})
	}
}
