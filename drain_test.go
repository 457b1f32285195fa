package reach_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
)

// TestDrainRefusesNewCallsAndWaitsForThoseInFlight: once Drain began, a
// new call is refused shutting_down (transient, nothing run, a suggestion
// the model can act on), while Drain waits for the call in flight to
// return. A model turn begun then is refused as well.
func TestDrainRefusesNewCallsAndWaitsForThoseInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(nil)
		entered, release := make(chan struct{}), make(chan struct{})
		var mu sync.Mutex
		ran := map[string]int{}
		rt.MustRegister(
			reach.Tool{Name: "book", Access: reach.Write, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				mu.Lock()
				ran["book"]++
				mu.Unlock()
				entered <- struct{}{}
				<-release // deaf to its cancellation
				return json.RawMessage(`"booked"`), nil
			}},
			reach.Tool{Name: "look", Access: reach.Read, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				mu.Lock()
				ran["look"]++
				mu.Unlock()
				return json.RawMessage(`"seen"`), nil
			}},
		)
		ctx, req := begin(t, rt, nil)
		defer req.End()
		var held *reach.Result
		var wg sync.WaitGroup
		wg.Go(func() { held = call(rt, ctx, "book", `{}`) })
		<-entered
		drained := make(chan int, 1)
		go func() { drained <- rt.Drain(context.Background()) }()
		synctest.Wait() // Drain waits for the call in flight
		select {
		case n := <-drained:
			t.Fatalf("Drain returned %d with a call in flight; want it to wait", n)
		default:
		}
		if !rt.Draining() {
			t.Fatal("Draining is false once Drain began")
		}
		res := call(rt, ctx, "look", `{}`)
		if e := res.Error; res.Status != reach.StatusRefused || e == nil || e.Code != "shutting_down" || e.Type != reach.TypeTransient ||
			!strings.Contains(e.Message, "Nothing ran") || e.Suggestion == "" {
			t.Errorf("a call once the runtime drains: %s; want refused shutting_down, transient, with a suggestion", res.ModelText())
		}
		if _, _, err := rt.BeginModel(ctx, "m"); err == nil || !strings.Contains(err.Error(), "shutting down") {
			t.Errorf("a model turn once the runtime drains: %v; want refused shutting_down", err)
		}
		close(release)
		wg.Wait()
		if n := <-drained; n != 0 {
			t.Errorf("Drain returned %d once the call in flight returned; want 0", n)
		}
		if held.Status != reach.StatusSuccess {
			t.Errorf("the call in flight as Drain began: %s; want it to finish", held.ModelText())
		}
		mu.Lock()
		if ran["book"] != 1 || ran["look"] != 0 {
			t.Errorf("ran %v; want book once, look never", ran)
		}
		mu.Unlock()
	})
}

// TestDrainBounded: Drain's context bounds its wait for a call that does
// not return; it reports the call still in flight.
func TestDrainBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(nil)
		entered, release := make(chan struct{}), make(chan struct{})
		rt.MustRegister(reach.Tool{Name: "book", Access: reach.Write, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			entered <- struct{}{}
			<-release
			return json.RawMessage(`"booked"`), nil
		}})
		ctx, req := begin(t, rt, nil)
		defer req.End()
		var wg sync.WaitGroup
		wg.Go(func() { call(rt, ctx, "book", `{}`) })
		<-entered
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if n := rt.Drain(dctx); n != 1 {
			t.Errorf("Drain past its bound with a call that never returns: %d; want 1", n)
		}
		close(release)
		wg.Wait()
		if n := rt.Drain(context.Background()); n != 0 {
			t.Errorf("Drain once the call returned: %d; want 0", n)
		}
	})
}

// TestDrainLetsUndosRun: a stop's compensation once the runtime drains
// runs its undos (system calls): refused, an undo would be dead-lettered,
// worse than what a kill leaves (the restart's recovery runs it).
func TestDrainLetsUndosRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var ran []string
		tool := func(name string) func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return func(context.Context, json.RawMessage) (json.RawMessage, error) {
				mu.Lock()
				ran = append(ran, name)
				mu.Unlock()
				return json.RawMessage(`"ok"`), nil
			}
		}
		rt := reach.New(nil)
		rt.MustRegister(
			reach.Tool{Name: "reserve", Access: reach.Write, Func: tool("reserve"), Undo: &reach.Followup{Tool: "release", Args: `{"id": "{args.id}"}`}},
			reach.Tool{Name: "release", Access: reach.Write, Func: tool("release")},
		)
		ctx, req := begin(t, rt, nil)
		if res := call(rt, ctx, "reserve", `{"id":"seat-4"}`); res.Status != reach.StatusSuccess {
			t.Fatalf("reserve: %s", res.ModelText())
		}
		done, cancel := context.WithCancel(context.Background())
		cancel()
		rt.Drain(done)
		req.Stop(reach.Cancel, "runtime", "the gateway stops")
		synctest.Wait()
		if n := rt.Drain(context.Background()); n != 0 {
			t.Errorf("Drain after the compensation: %d calls in flight; want 0", n)
		}
		mu.Lock()
		defer mu.Unlock()
		if got := strings.Join(ran, ", "); got != "reserve, release" {
			t.Errorf("ran %s; want reserve, then its undo release", got)
		}
		if dl, err := rt.DeadLetters(context.Background(), ""); err != nil || len(dl) != 0 {
			t.Errorf("dead letters: %v (%v); want none", dl, err)
		}
	})
}
