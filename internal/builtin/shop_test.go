package builtin

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentreach/reach"
)

// TestShop: format_answer asks the model, which searches the knowledge
// base under its own frame; a refund runs once per idempotency key.
func TestShop(t *testing.T) {
	rt := reach.New(nil)
	rt.MustRegister(Tools(rt, Scripted{})...)
	ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	res := rt.Call(ctx, &reach.Call{ID: "f", Tool: "format_answer", Arguments: json.RawMessage(`{"text":"how do refunds work?"}`)})
	var out struct{ Markdown string }
	if res.Status != reach.StatusSuccess || json.Unmarshal(res.Data, &out) != nil || out.Markdown != "**Answer:** how do refunds work?\n\n_Source: Refund policy_" {
		t.Fatalf("format_answer = %s %s", res.Status, res.Data)
	}
	var model, search *reach.Frame
	for _, f := range req.Frames() {
		switch f.Name {
		case "scripted":
			if model == nil {
				model = f
			}
		case "search_kb":
			search = f
		}
	}
	if model == nil || search == nil || search.Parent != model || model.Parent == nil || model.Parent.Name != "format_answer" {
		t.Errorf("search_kb does not nest under the model frame under format_answer")
	}
	refund := func(key string) json.RawMessage {
		res := rt.Call(ctx, &reach.Call{ID: key, Tool: "refund_order", IdempotencyKey: key,
			Arguments: json.RawMessage(`{"order_id":"1001","amount":10,"reason":"broken"}`)})
		if res.Status != reach.StatusSuccess {
			t.Fatalf("refund %s: %s %v", key, res.Status, res.Error)
		}
		return res.Data
	}
	refund("k1")
	refund("k1")
	var left struct {
		Refunded float64 `json:"refunded"`
	}
	res = rt.Call(ctx, &reach.Call{ID: "g", Tool: "get_order", Arguments: json.RawMessage(`{"order_id":"1001"}`)})
	if json.Unmarshal(res.Data, &left) != nil || left.Refunded != 10 {
		t.Errorf("after two refunds under one key, the order shows %s", res.Data)
	}
}
