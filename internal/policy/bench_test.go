package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
)

// benchPolicies returns the default policies, the two examples, and n more:
// scoped to one of 250 tools each (scoped) or to every tool (not scoped).
func benchPolicies(n int, scoped bool) string {
	var b strings.Builder
	b.Write(DefaultSource())
	b.WriteString(argumentRule)
	b.WriteString(sceneRule)
	for i := range n {
		res := "resource"
		if scoped {
			res = fmt.Sprintf(`resource == Reach::Tool::"tool_%d"`, i%250)
		}
		fmt.Fprintf(&b, "@id(\"p%d\")\nforbid (principal, action == Reach::Action::\"call\", %s)\n"+
			"when { context.arguments has limit && context.arguments.limit > %d && !principal.roles.contains(\"admin\") };\n", i, res, 1000+i)
	}
	return b.String()
}

// captureCall runs one call through a runtime and returns the *reach.Call
// as the authorize stage sees it (resolved, validated, with its frame).
func captureCall(tb testing.TB, tool string, args string) *reach.Call {
	var got *reach.Call
	rt := reach.New(&reach.Options{Middleware: []reach.Middleware{func(next reach.Handler) reach.Handler {
		return func(ctx context.Context, c *reach.Call) (*reach.Result, error) {
			got = c
			return next(ctx, c)
		}
	}}})
	rt.MustRegister(reach.Tool{Name: tool, Tags: []string{"orders", "support"}, Func: noop})
	ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{Principal: "alice", Roles: []string{"support"},
		Tenant: "acme", Scene: "support", Attributes: map[string]string{"department": "sales"}})
	if err != nil {
		tb.Fatal(err)
	}
	defer req.End()
	if res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: tool, Arguments: json.RawMessage(args)}); res.IsError() {
		tb.Fatal(res.Error)
	}
	return got
}

// BenchmarkAuthorize: one decision among 500 policies (plus the six shipped
// and example ones), a read tool with three arguments.
func BenchmarkAuthorize(b *testing.B) {
	for _, bc := range []struct {
		name   string
		scoped bool
	}{{"500 scoped to tools", true}, {"500 unscoped", false}} {
		b.Run(bc.name, func(b *testing.B) {
			set := mustParse(b, benchPolicies(500, bc.scoped))
			eng := New(&Options{Policies: set})
			c := captureCall(b, "tool_7", `{"department":"sales","limit":20,"query":"late delivery"}`)
			ctx := context.Background()
			if d, e := eng.Authorize(ctx, c); d != reach.Permit {
				b.Fatal(d, e)
			}
			b.ReportAllocs()
			for b.Loop() {
				eng.Authorize(ctx, c)
			}
		})
	}
}

// BenchmarkVisible: a listing decision, first (partial evaluation) and
// cached.
func BenchmarkVisible(b *testing.B) {
	set := mustParse(b, benchPolicies(500, true))
	tool := reach.Tool{Name: "tool_7", Tags: []string{"orders"}}
	b.Run("uncached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			set.couldPermit(&alice, "support", tool.Name, tool.Access, tool.Tags)
		}
	})
	b.Run("cached", func(b *testing.B) {
		eng := New(&Options{Policies: set})
		b.ReportAllocs()
		for b.Loop() {
			eng.Visible(alice, "support", tool)
		}
	})
}

// BenchmarkChain: one read call through the runtime's whole chain, with the
// default authorizer (access levels) and with this engine and 500 policies.
func BenchmarkChain(b *testing.B) {
	for _, bc := range []struct {
		name string
		auth reach.Authorizer
	}{
		{"access levels", nil},
		{"cedar, 500 policies", New(&Options{Policies: mustParse(b, benchPolicies(500, true))})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rt := reach.New(&reach.Options{Authorizer: bc.auth})
			var seq atomic.Int64
			rt.MustRegister(reach.Tool{Name: "tool_7", Tags: []string{"orders"}, Reentrancy: reach.Reentrant,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"department":{"type":"string"},"limit":{"type":"integer"},"query":{"type":"string"}}}`),
				Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					return json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq.Add(1))), nil
				}})
			ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{Principal: "alice", Roles: []string{"support"},
				Scene: "support", Attributes: map[string]string{"department": "sales"}, Budget: &reach.Budget{}})
			if err != nil {
				b.Fatal(err)
			}
			defer req.End()
			call := &reach.Call{ID: "c", Tool: "tool_7", Arguments: json.RawMessage(`{"department":"sales","limit":20,"query":"late delivery"}`)}
			if res := rt.Call(ctx, call); res.IsError() {
				b.Fatal(res.Error)
			}
			b.ReportAllocs()
			for b.Loop() {
				if res := rt.Call(ctx, call); res.IsError() {
					b.Fatal(res.Error)
				}
			}
		})
	}
}
