package reach

import (
	"context"
	"encoding/json"
	"testing"
)

// TestStepOfALetGoTreeRefused: a tool call and a model turn of request r
// were admitted (the admit stage let them on) when a stop reached r and
// r ended, which let its tree's loop detector go; then they reach the
// loop guard. Each is refused as r now stands (stopped), not judged by a
// new, empty detector, and the call's next stage never runs; ended with
// no stop, they are refused as ended. Before, each was judged afresh (the
// empty detector found nothing) and went on.
func TestStepOfALetGoTreeRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop bool
		code string
	}{{"stopped", true, "stopped_soft"}, {"ended", false, "request_ended"}} {
		t.Run(tc.name, func(t *testing.T) {
			rt := New(nil)
			rt.MustRegister(Tool{Name: "save", Access: Write, Reentrancy: Reentrant,
				Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					return json.RawMessage(`"saved"`), nil
				}})
			ctx, r, err := rt.Begin(context.Background(), &RequestOptions{ID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			if res := rt.Call(ctx, &Call{Tool: "save", Arguments: json.RawMessage(`{"k":0}`)}); res.IsError() {
				t.Fatal(res.ModelText())
			}
			// Admitted: a call past the admit stage, a model frame past its
			// admit check.
			c := &Call{Tool: "save", req: r, tool: rt.lookup("save"), args: json.RawMessage(`{"k":1}`)}
			c.frame = rt.newToolFrame(ctx, c)
			f := &Frame{ID: newFrameID(), Kind: ModelFrame, Name: "m", Request: r}
			if tc.stop {
				r.Stop(Soft, "api", "enough")
			}
			r.End()
			if !r.loops.Released() {
				t.Fatal("the ended tree keeps its detector")
			}
			ran := false
			_, err = rt.loopGuard(func(context.Context, *Call) (*Result, error) {
				ran = true
				return &Result{Status: StatusSuccess}, nil
			})(ctx, c)
			if e, ok := err.(*Error); !ok || e.Code != tc.code || ran {
				t.Errorf("the call at the loop guard: %v (went on: %v); want it refused %s", err, ran, tc.code)
			}
			if e := rt.loopModel(f); e == nil || e.Code != tc.code {
				t.Errorf("the model turn at the loop guard: %v; want it refused %s", e, tc.code)
			}
			if d := r.loops.Live(); d != nil {
				t.Error("a detector was made for the let-go tree")
			}
		})
	}
}
