package upstream

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
)

// KeepFor's context carries the call's caller and its Kept in one value:
// the tool's Func finds the caller, and what it keeps reaches the front.
func TestKeepFor(t *testing.T) {
	rt := reach.New(&reach.Options{})
	var seen *Caller
	rt.MustRegister(reach.Tool{Name: "echo", Access: reach.Read, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		seen = CallerFrom(ctx)
		keep(ctx, &mcpwire.Result{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"hi"}`)}}, nil, nil, json.RawMessage(`"hi"`), nil)
		return json.RawMessage(`"hi"`), nil
	}})
	rctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	route := context.WithValue(t.Context(), struct{ route int }{}, 1)
	ctx, kept, caller := KeepFor(rctx, &Caller{Route: route, Progress: "tok"})
	res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "echo"})
	if res.Status != reach.StatusSuccess {
		t.Fatalf("call: %+v", res.Error)
	}
	if seen == nil || seen != caller || seen.Route != route || seen.Progress != "tok" {
		t.Errorf("the Func saw caller %+v, want %+v", seen, caller)
	}
	if kept.frame != res.Frame || string(kept.data) != `"hi"` {
		t.Errorf("kept frame %v data %s, want frame %v data \"hi\"", kept.frame, kept.data, res.Frame)
	}
	if _, ok := ctx.Value(struct{ route int }{}).(int); ok {
		t.Error("the call's context has the route's values: want the request's only")
	}

	ctx, kept, caller = KeepFor(rctx, nil)
	res = rt.Call(ctx, &reach.Call{ID: "c2", Tool: "echo"})
	if seen != nil || caller != nil {
		t.Errorf("without a caller the Func saw %+v (KeepFor gave %+v), want none", seen, caller)
	}
	if kept.frame != res.Frame {
		t.Errorf("kept frame %v, want %v", kept.frame, res.Frame)
	}
}

// The wire client's _meta of a call (mcpwire.CallLink) has link's keys:
// it is written as the map the SDK's client sends.
func TestCallLinkKeys(t *testing.T) {
	l := mcpwire.CallLink{ProgressToken: "up-2", IdempotencyKey: "echo:k", Parent: "00000000000000ab", Request: "r1",
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00000000000000ab-01"}
	meta := map[string]any{"progressToken": l.ProgressToken, link.MetaIdempotencyKey: l.IdempotencyKey,
		link.MetaParent: l.Parent, link.MetaRequest: l.Request, link.MetaTraceparent: l.Traceparent}
	want := mcpwire.AppendCall(nil, []byte(`"reach-1"`), "echo", nil, meta)
	if got := mcpwire.AppendCallLink(nil, []byte(`"reach-1"`), "echo", nil, &l); string(got) != string(want) {
		t.Errorf("AppendCallLink = %s\nwant %s", got, want)
	}
	// A frame's link written from its span, as forward writes it, is
	// link.FrameLink's to the byte.
	f := someFrame(t)
	tp, parent, request := link.FrameLink(f)
	byString := mcpwire.CallLink{IdempotencyKey: "echo:k", Parent: parent, Request: request, Traceparent: tp}
	bySpan := mcpwire.CallLink{IdempotencyKey: "echo:k", Request: request, Spanned: true, Span: uint64(f.ID), TraceID: f.Request.Trace()}
	want = mcpwire.AppendCallLink(nil, []byte(`"reach-1"`), "echo", []byte(`{}`), &byString)
	if got := mcpwire.AppendCallLink(nil, []byte(`"reach-1"`), "echo", []byte(`{}`), &bySpan); string(got) != string(want) {
		t.Errorf("AppendCallLink from the span = %s\nwant %s", got, want)
	}
}

// someFrame returns the frame of a tool call, made in a request of its own.
func someFrame(t *testing.T) *reach.Frame {
	t.Helper()
	rt := reach.New(nil)
	var f *reach.Frame
	rt.MustRegister(reach.Tool{Name: "t", Access: reach.Read, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		f, _ = reach.FrameFrom(ctx)
		return json.RawMessage(`{}`), nil
	}})
	ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(req.End)
	if res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "t", Arguments: json.RawMessage(`{}`)}); res.IsError() || f == nil {
		t.Fatalf("the call did not run: %s", res.ModelText())
	}
	return f
}
