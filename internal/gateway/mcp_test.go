package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMCPListTools(t *testing.T) {
	g := newTestGateway(t, &config.Config{Tools: map[string]config.ToolOverride{"refund_order": {Access: reach.HighRisk}}})
	cs := connectMCP(t, g, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		got[tl.Name] = tl
	}
	for _, name := range []string{"get_order", "search_kb", "format_answer", "refund_order"} {
		tl := got[name]
		if tl == nil {
			t.Fatalf("tools/list lacks %s", name)
		}
		if tl.Description == "" || tl.InputSchema == nil {
			t.Errorf("%s has no description or input schema", name)
		}
	}
	if a := got["get_order"].Annotations; a == nil || !a.ReadOnlyHint {
		t.Errorf("get_order annotations = %+v, want readOnlyHint", a)
	}
	if a := got["refund_order"].Annotations; a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
		t.Errorf("refund_order (high_risk) annotations = %+v, want destructiveHint", a)
	}
	schema, _ := json.Marshal(got["get_order"].InputSchema)
	if !strings.Contains(string(schema), `"order_id"`) {
		t.Errorf("get_order schema = %s", schema)
	}
}

func TestMCPCall(t *testing.T) {
	g := newTestGateway(t, &config.Config{Tools: map[string]config.ToolOverride{"refund_order": {Access: reach.HighRisk}}})
	cs := connectMCP(t, g, nil)

	t.Run("success", func(t *testing.T) {
		res, text := callText(t, cs, "get_order", map[string]any{"order_id": "1003"}, nil)
		if res.IsError {
			t.Fatalf("isError: %s", text)
		}
		sc, _ := res.StructuredContent.(map[string]any)
		if sc["customer"] != "Linus" || !strings.Contains(text, `"Linus"`) {
			t.Errorf("structured %v, text %q", res.StructuredContent, text)
		}
		if res.Meta[link.MetaStatus] != "success" || res.Meta[link.MetaRequest] == "" || len(res.Meta[link.MetaFrame].(string)) != 16 {
			t.Errorf("result _meta = %v", res.Meta)
		}
	})
	cases := []struct {
		name string
		tool string
		args any
		want []string // in the text the model reads
	}{
		{"approval pending", "refund_order", map[string]any{"order_id": "1001", "amount": 5, "reason": "broken"},
			[]string{"needs approval before it runs", "waits for the user local", "Do not repeat it before"}},
		{"unknown tool", "get_ordr", map[string]any{}, []string{`There is no tool named "get_ordr"`, "You may use instead: get_order"}},
		{"invalid arguments", "get_order", map[string]any{"order_id": "x"}, []string{"/order_id", "Fix the fields"}},
		{"tool failure", "get_order", map[string]any{"order_id": "9999"}, []string{"there is no order 9999"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, text := callText(t, cs, tc.tool, tc.args, nil)
			if !res.IsError {
				t.Fatalf("isError is false: %s", text)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("text %q lacks %q", text, w)
				}
			}
			if res.Meta[link.MetaError] == nil {
				t.Errorf("no structured error in _meta: %v", res.Meta)
			}
			// _meta carries the error's code and type for programs, not
			// its message and suggestion: they are the text already, and a
			// client that gives its model the whole result (LlamaIndex TS)
			// would send them twice.
			e, _ := res.Meta[link.MetaError].(map[string]any)
			if e["code"] == nil || e["type"] == nil || e["message"] != nil || e["suggestion"] != nil {
				t.Errorf("_meta %s = %v, want its code and type without the text's message and suggestion", link.MetaError, e)
			}
		})
	}
}

func TestMCPSessionIsOneRequest(t *testing.T) {
	g := newTestGateway(t, nil)
	cs := connectMCP(t, g, nil)
	r1, _ := callText(t, cs, "search_kb", map[string]any{"query": "refund"}, mcp.Meta{link.MetaWhy: "the user asked about refunds"})
	r2, _ := callText(t, cs, "get_order", map[string]any{"order_id": "1001"}, nil)
	id := r1.Meta[link.MetaRequest].(string)
	if r2.Meta[link.MetaRequest] != id {
		t.Fatalf("calls of one session ran in requests %v and %v", id, r2.Meta[link.MetaRequest])
	}
	req, _ := g.rt.Lookup(id)
	if req.Agent() != "test-client" {
		t.Errorf("agent = %q, want the client's name", req.Agent())
	}
	fs := req.Frames()
	if len(fs) != 2 || fs[0].Why() != "the user asked about refunds" {
		t.Errorf("frames %d, why %q", len(fs), fs[0].Why())
	}
	// A named request wins over the session's.
	r3, _ := callText(t, cs, "search_kb", map[string]any{"query": "x"}, mcp.Meta{link.MetaRequest: "ticket-42"})
	if r3.Meta[link.MetaRequest] != "ticket-42" {
		t.Errorf("named request ran in %v", r3.Meta[link.MetaRequest])
	}
	// After the idle gap, the session's next call begins a new request.
	g.owned.SetClock(func() time.Time { return time.Now().Add(config.DefaultIdleGap + time.Second) })
	r4, _ := callText(t, cs, "search_kb", map[string]any{"query": "y"}, nil)
	if r4.Meta[link.MetaRequest] == id {
		t.Errorf("after the idle gap the session still uses request %s", id)
	}
	g.owned.Sweep()
	if old, _ := g.rt.Lookup(id); old.State() != "completed" {
		t.Errorf("the idle request is %s, want completed", old.State())
	}
}

// A session its client closes without a DELETE (here in memory: no HTTP)
// ends its request at the gateway's next sweep, not before: nothing waits
// for each session's end.
func TestMCPSessionCloseEndsItsRequest(t *testing.T) {
	g := newTestGateway(t, nil)
	cs := connectMCP(t, g, nil)
	res, _ := callText(t, cs, "search_kb", map[string]any{"query": "x"}, nil)
	req, _ := g.rt.Lookup(res.Meta[link.MetaRequest].(string))
	g.front.SweepClients()
	if req.State() != "running" {
		t.Fatalf("request is %s after a sweep with its session open, want running", req.State())
	}
	cs.Close()
	deadline := time.Now().Add(time.Minute)
	for req.State() != "completed" {
		if time.Now().After(deadline) {
			t.Fatalf("request is %s after the session closed and a sweep, want completed", req.State())
		}
		time.Sleep(5 * time.Millisecond)
		g.front.SweepClients() // the SDK drops the session once its connection is done
	}
}

func TestMCPBudgetMeta(t *testing.T) {
	g := newTestGateway(t, &config.Config{Budgets: map[string]config.Budget{
		"default": {Budget: reach.Budget{ToolCalls: 10}},
		"tiny":    {Budget: reach.Budget{ToolCalls: 1}},
	}})
	cs := connectMCP(t, g, nil)
	for _, b := range []any{"tiny", map[string]any{"tool_calls": 1}} {
		name := "b" + strings.ReplaceAll(strings.ReplaceAll(strings.Trim(strings.ReplaceAll(marshalString(b), `"`, ""), "{}"), ":", "-"), " ", "")
		meta := mcp.Meta{link.MetaRequest: name, link.MetaBudget: b}
		if res, text := callText(t, cs, "search_kb", map[string]any{"query": "a"}, meta); res.IsError {
			t.Fatalf("first call refused: %s", text)
		}
		res, text := callText(t, cs, "search_kb", map[string]any{"query": "b"}, meta)
		if !res.IsError || !strings.Contains(text, "tool-call budget") {
			t.Errorf("budget %v: second call = %q, want a tool-call budget refusal", b, text)
		}
	}
	// A client cannot widen its budget beyond the default.
	callText(t, cs, "search_kb", map[string]any{"query": "a"}, mcp.Meta{link.MetaRequest: "wide", link.MetaBudget: map[string]any{"tool_calls": 1000}})
	if r, _ := g.rt.Lookup("wide"); r.Budget().ToolCalls != 10 {
		t.Errorf("widened budget = %d tool calls, want the default's 10", r.Budget().ToolCalls)
	}
	// An unknown budget name is the client's error.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_kb", Arguments: map[string]any{"query": "a"},
		Meta: mcp.Meta{link.MetaRequest: "x", link.MetaBudget: "huge"}}); err == nil || !strings.Contains(err.Error(), "tiny") {
		t.Errorf("unknown budget: err = %v, want one listing the configured budgets", err)
	}
}

func marshalString(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestMCPMalformedMeta(t *testing.T) {
	g := newTestGateway(t, nil)
	cs := connectMCP(t, g, nil)
	for _, meta := range []mcp.Meta{
		{link.MetaParent: "not-a-frame"},
		{link.MetaRequest: 42},
		{link.MetaBudget: []any{1}},
		{link.MetaBudget: map[string]any{"turnz": 1}},
		{link.MetaParent: "00000000000000aa"}, // well-formed, but no such frame
	} {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_kb", Arguments: map[string]any{"query": "a"}, Meta: meta})
		if err == nil {
			t.Errorf("_meta %v: no error", meta)
		}
	}
	// A malformed traceparent is ignored, as W3C trace context says.
	if res, text := callText(t, cs, "search_kb", map[string]any{"query": "a"}, mcp.Meta{link.MetaTraceparent: "garbage"}); res.IsError {
		t.Errorf("malformed traceparent: %s", text)
	}
}

// TestClientBudgetNeverWidens: a budget a client asks for in
// _meta["reach/budget"] narrows the default budget and never widens it:
// each amount is capped at the configured default's, or at the runtime's
// when none is configured, and negative amounts are refused.
func TestClientBudgetNeverWidens(t *testing.T) {
	for _, tc := range []struct {
		name string
		def  map[string]config.Budget
		ask  map[string]any
		want reach.Budget // the fields checked: turns, depth, tool calls, wall
		err  string
	}{
		{"narrower", map[string]config.Budget{"default": {Budget: reach.Budget{ToolCalls: 2, Turns: 10}}}, map[string]any{"tool_calls": 1}, reach.Budget{ToolCalls: 1, Turns: 10}, ""},
		{"wider", map[string]config.Budget{"default": {Budget: reach.Budget{ToolCalls: 2, Turns: 10}}}, map[string]any{"tool_calls": 5, "turns": 1000}, reach.Budget{ToolCalls: 2, Turns: 10}, ""},
		{"no default configured", nil, map[string]any{"turns": 1000, "wall": "24h"}, reach.Budget{Turns: 30, Depth: 8, ToolCalls: 200, Wall: 10 * time.Minute}, ""},
		{"negative", map[string]config.Budget{"default": {Budget: reach.Budget{ToolCalls: 2}}}, map[string]any{"tool_calls": -1}, reach.Budget{}, "must not be negative"},
		{"negative wall", map[string]config.Budget{"default": {Budget: reach.Budget{ToolCalls: 2}}}, map[string]any{"wall": "-1h"}, reach.Budget{}, "must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newTestGateway(t, &config.Config{Examples: true, Budgets: tc.def})
			cs := connectMCP(t, g, nil)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_kb", Arguments: map[string]any{"query": "refund"},
				Meta: mcp.Meta{link.MetaRequest: "r-" + strings.ReplaceAll(tc.name, " ", "-"), link.MetaBudget: tc.ask}})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("asking for %v: %v %v, want an error saying %q", tc.ask, err, res, tc.err)
				}
				return
			}
			if err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res)
			}
			r, ok := g.rt.Lookup("r-" + strings.ReplaceAll(tc.name, " ", "-"))
			if !ok {
				t.Fatal("no request")
			}
			b := r.Budget()
			if b.Turns != tc.want.Turns || b.ToolCalls != tc.want.ToolCalls || (tc.want.Depth != 0 && b.Depth != tc.want.Depth) || (tc.want.Wall != 0 && b.Wall != tc.want.Wall) {
				t.Errorf("asking for %v under %v gave %+v, want %+v", tc.ask, tc.def, b, tc.want)
			}
		})
	}
}
