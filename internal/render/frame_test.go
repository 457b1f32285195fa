package render

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestFrames: a request's frames come parents first, with their links, and
// the JSON the API answers with names a root's parent null.
func TestFrames(t *testing.T) {
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "echo", Access: reach.Read, Reentrancy: reach.Reentrant,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }})
	ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	mctx, turn, err := rt.BeginModel(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	rt.Call(mctx, &reach.Call{ID: "c", Tool: "echo", Arguments: json.RawMessage(`{"a":1}`)})
	turn.EndModel(reach.TokenUsage{Input: 3})
	fs := Frames(req)
	if len(fs) != 2 || fs[0].Kind != "model" || fs[1].Kind != "tool" || fs[1].Parent == nil || *fs[1].Parent != fs[0].ID ||
		fs[1].ArgumentsText() != `{"a":1}` || fs[0].ArgumentsText() != "" || fs[1].Ended == nil {
		t.Fatalf("Frames = %+v", fs)
	}
	b, _ := json.Marshal(GraphOf(req))
	if !strings.Contains(string(b), `"request":"r","frames":[{"id":"`+fs[0].ID.String()+`","parent":null,`) {
		t.Errorf("graph JSON = %s", b)
	}
	if !strings.Contains(string(DOT(fs)), `"f`+fs[0].ID.String()+`" -> "f`+fs[1].ID.String()+`"`) {
		t.Errorf("DOT lacks the model -> tool edge:\n%s", DOT(fs))
	}
}
