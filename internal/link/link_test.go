package link

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

func TestParseTraceparent(t *testing.T) {
	cases := map[string]reach.FrameID{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":       0x00f067aa0ba902b7,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00":       0x00f067aa0ba902b7,
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra": 0x00f067aa0ba902b7,
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01":       0,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01":       0,
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":       0,
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01":       0,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x":     0,
		"": 0, "00-xyz": 0,
	}
	for in, want := range cases {
		got, _, ok := ParseTraceparent(in)
		if got != want || ok != (want != 0) {
			t.Errorf("ParseTraceparent(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	f := reach.FrameID(0x1234)
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + f.String() + "-01"
	if got, trace, ok := ParseTraceparent(tp); !ok || got != f || hex.EncodeToString(trace[:]) != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("round trip of %q = %v", tp, got)
	}
	if BaggageRequest("a=b, reach.request=r%201;p=1 ,c=d") != "r 1" {
		t.Errorf("baggage not read")
	}
}

// TestFromMeta: _meta names the request, the parent frame (reach/parent,
// or a traceparent's span), the budget and scene; a malformed value is an
// error that names its key.
func TestFromMeta(t *testing.T) {
	m, err := FromMeta(map[string]any{MetaParent: "00000000000000ab", MetaWhy: "w", MetaCallID: "c", MetaBudget: "small",
		MetaTraceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", MetaBaggage: "reach.request=r1"})
	if err != nil || m.Parent != 0xab || m.Trace != 0x00f067aa0ba902b7 || m.Request != "r1" || m.Why != "w" || m.CallID != "c" || m.Budget == nil || m.Budget.Name != "small" {
		t.Errorf("FromMeta = %+v, %v", m, err)
	}
	for _, tc := range []struct {
		meta map[string]any
		says string
	}{
		{map[string]any{MetaRequest: 7}, `_meta["reach/request"] must be a string`},
		{map[string]any{MetaParent: "xyz"}, `_meta["reach/parent"]`},
		{map[string]any{MetaScene: "a b"}, `_meta["reach/scene"]`},
		{map[string]any{MetaRequest: strings.Repeat("r", MaxRequestID+1)}, "longer than"},
		{map[string]any{MetaBudget: map[string]any{"turns": -1}}, "must not be negative"},
	} {
		if _, err := FromMeta(tc.meta); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("FromMeta(%v) = %v, want an error saying %q", tc.meta, err, tc.says)
		}
	}
}

// FrameMeta links a call to its frame: the traceparent of the frame's span
// in its request's trace, the frame's id, the request's id.
func TestFrameMeta(t *testing.T) {
	rt := reach.New(&reach.Options{})
	var f *reach.Frame
	var m map[string]any
	rt.MustRegister(reach.Tool{Name: "t", Access: reach.Read, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		f, _ = reach.FrameFrom(ctx)
		m = FrameMeta(nil, f)
		return json.RawMessage(`{}`), nil
	}})
	ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	if res := rt.Call(ctx, &reach.Call{ID: "c1", Tool: "t"}); res.Status != reach.StatusSuccess || f == nil {
		t.Fatalf("call: %+v", res.Error)
	}
	tr := req.Trace()
	wantTP := "00-" + hex.EncodeToString(tr[:]) + "-" + f.ID.String() + "-01"
	if m[MetaTraceparent] != wantTP || m[MetaParent] != f.ID.String() || m[MetaRequest] != "r1" {
		t.Errorf("FrameMeta = %v, want traceparent %s, parent %s, request r1", m, wantTP, f.ID)
	}
	if got, trace, ok := ParseTraceparent(wantTP); !ok || got != f.ID || trace != tr {
		t.Errorf("ParseTraceparent(%s) = %v %x %v", wantTP, got, trace, ok)
	}
}
