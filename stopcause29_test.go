package reach_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
)

// TestStoppedHasItsCause: whoever sees a request stopped (State) sees why
// (StopCause), however close to the stop it looks. Before, a stop set the
// mode and then the cause: a look in between saw it stopped with no
// cause, and so did a request's End, which recorded its end at once
// instead of after the stop above it was stored (TestStopStoredAboveFirst
// failed so under load).
func TestStoppedHasItsCause(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("a look concurrent with the stop needs two threads")
	}
	rt := reach.New(nil)
	for i := range 3000 {
		_, r, err := rt.Begin(context.Background(), &reach.RequestOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var bad atomic.Bool
		looking, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			close(looking)
			for r.State() == reach.RequestRunning {
			}
			if r.StopCause() == nil {
				bad.Store(true)
			}
		}()
		<-looking
		if i%2 == 0 {
			r.Stop(reach.Cancel, "test", "enough")
		} else {
			r.StopWith(reach.Cause{Mode: reach.Cancel, By: "elsewhere", Reason: "enough"})
		}
		<-done
		if bad.Load() {
			t.Fatalf("request %d seen %s with no cause", i, r.State())
		}
		r.End()
	}
}
