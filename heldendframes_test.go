package reach_test

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
)

// TestStoppedEndBoundedPastMaxFrames: a request past MaxFrames (its later
// frames run and are not kept) is stopped and ended while a write of it
// whose tool ignores its cancellation runs. Its end is held for that
// write, and bounded by the write's tool's time all the same: then it is
// recorded, once. Before, the bound was taken from the request's kept
// frames only: that write's frame was not among them, so nothing bounded
// the end, and a tool that never answered held it for good (the request
// never ended, its budget never settled).
func TestStoppedEndBoundedPastMaxFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &heldStops{}
		entered, release := make(chan string, 1), make(chan struct{})
		rt := reach.New(&reach.Options{Requests: st, MaxFrames: 1})
		inFlightTools(rt, st, 10*time.Millisecond, entered, nil, release, nil)
		ctx, r, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		if res := rt.Call(ctx, &reach.Call{ID: "a", Tool: "book", Arguments: json.RawMessage(`{"ref":"a"}`)}); res.IsError() {
			t.Fatal(res.ModelText()) // the one frame kept
		}
		done := make(chan *reach.Result, 1)
		go func() {
			done <- rt.Call(ctx, &reach.Call{ID: "w", Tool: "book", Arguments: json.RawMessage(`{"ref":"w"}`)})
		}()
		<-entered
		r.Stop(reach.Cancel, "operator", "enough")
		r.End()
		time.Sleep(time.Hour) // in the bubble: past any bound, once all else waits
		synctest.Wait()
		if got := st.records(); count(got, "end r stopped_cancel") != 1 {
			t.Errorf("recorded %v; want r's end once, its write still running past its time", got)
		}
		close(release)
		<-done
		synctest.Wait()
		if got := st.records(); count(got, "end r stopped_cancel") != 1 || count(got, "undo w") != 1 {
			t.Errorf("recorded %v; want the late write undone once, and r's end once", got)
		}
	})
}
