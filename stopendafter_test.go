package reach_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// TestStoppedEndRecordedAfterItsUndos: a stopped request ended while its
// stop's undos run (a client's end right after the stop; an A2A
// hand-off's, which ends as soon as its stop reaches it) has its end
// recorded once they ran, by a stop of its own and by one above it; so a
// kill before leaves it stopped and not ended, which the restart lists
// and compensates. Before, the end was recorded at once (End), maybe
// before the compensation's request began: a kill then left it stopped
// and ended, which nothing found (TestStoppedEndStoredAfterItsUndos in
// internal/durable). An end with no compensation under way is recorded at
// once, as before.
func TestStoppedEndRecordedAfterItsUndos(t *testing.T) {
	for _, by := range []string{"its own stop", "a stop above"} {
		t.Run(by, func(t *testing.T) {
			st := &heldStops{}
			entered, release := make(chan string, 4), make(chan struct{})
			rt := reach.New(&reach.Options{Requests: st})
			rt.MustRegister(
				reach.Tool{Name: "book", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true,
					Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil },
					Undo: &reach.Followup{Tool: "unbook", Args: `{"ref": "{args.ref}"}`}},
				reach.Tool{Name: "unbook", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true,
					Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
						var in struct{ Ref string }
						json.Unmarshal(a, &in)
						entered <- in.Ref
						<-release
						st.note("undo " + in.Ref)
						return json.RawMessage(`"ok"`), nil
					}})
			pctx, p, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "p"})
			if err != nil {
				t.Fatal(err)
			}
			r, rctx := p, pctx
			if by == "a stop above" {
				if rctx, r, err = rt.Delegate(pctx, &reach.Delegation{Agent: "sub", ID: "s"}); err != nil {
					t.Fatal(err)
				}
			}
			if res := rt.Call(rctx, &reach.Call{ID: "b", Tool: "book", Arguments: json.RawMessage(`{"ref":"r1"}`)}); res.IsError() {
				t.Fatal(res.ModelText())
			}
			p.Stop(reach.Cancel, "operator", "enough")
			select {
			case <-entered:
			case <-time.After(time.Minute):
				t.Fatal("the stop's undo did not begin within a minute")
			}
			r.End()
			end := "end " + r.ID() + " stopped_cancel"
			if got := st.records(); slices.Contains(got, end) {
				t.Errorf("recorded %v while its undo ran; want its end recorded after it", got)
			}
			close(release)
			var got []string
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
				if got = st.records(); slices.Contains(got, end) || time.Now().After(deadline) {
					break
				}
			}
			if u, e := slices.Index(got, "undo r1"), slices.Index(got, end); u < 0 || e < u {
				t.Errorf("recorded %v; want %q after %q", got, end, "undo r1")
			}
			if by == "its own stop" {
				// With nothing to undo, an end is recorded at once.
				_, q, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "q"})
				if err != nil {
					t.Fatal(err)
				}
				q.Stop(reach.Cancel, "operator", "enough")
				q.End()
				if got := st.records(); !slices.Contains(got, "end q stopped_cancel") {
					t.Errorf("recorded %v; want q's end at once", got)
				}
			}
		})
	}
}
