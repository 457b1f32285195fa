package reach_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/agentreach/reach"
)

// drainOrder records the model frames' ends and whether Drain had
// returned when each was recorded.
type drainOrder struct {
	mu      sync.Mutex
	drained bool
	late    []string // model frames recorded after Drain returned
	ended   int
}

func (d *drainOrder) Record(_ context.Context, e *reach.Event) {
	if e.Kind != reach.ModelFrame {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ended++
	if d.drained {
		d.late = append(d.late, e.Frame.String())
	}
}

// TestDrainWaitsForModelTurns: Drain waits for the model turns in flight
// (BeginModel .. EndModel, FailModel, FailModelSpent, RefuseModel) as it
// waits for calls: each turn's end is recorded before Drain returns, and
// a Drain whose ctx has ended counts them among those left. A turn the
// runtime refuses as it begins is not counted. Before, Drain waited for
// calls only: it returned 0 with turns in flight, whose ends were then
// written into a store that was closing.
func TestDrainWaitsForModelTurns(t *testing.T) {
	ends := map[string]func(f *reach.Frame){
		"EndModel":       func(f *reach.Frame) { f.EndModel(reach.TokenUsage{Input: 10, Output: 5}) },
		"FailModel":      func(f *reach.Frame) { f.FailModel(errors.New("the stream was cut")) },
		"FailModelSpent": func(f *reach.Frame) { f.FailModelSpent(errors.New("cut after its usage"), reach.TokenUsage{Input: 10}) },
		"RefuseModel": func(f *reach.Frame) {
			f.RefuseModel(context.Background(), &reach.Error{Guard: "budget", Type: reach.TypeBudget, Code: "budget_tokens",
				Message: "spent on every instance", Suggestion: "answer with what you have"})
		},
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				order := &drainOrder{}
				rt := reach.New(&reach.Options{Recorder: order})
				ctx, req := begin(t, rt, nil)
				defer req.End()
				_, a, err := rt.BeginModel(ctx, "m")
				if err != nil {
					t.Fatal(err)
				}
				_, b, err := rt.BeginModel(ctx, "m")
				if err != nil {
					t.Fatal(err)
				}
				gone, cancel := context.WithCancel(context.Background())
				cancel()
				if n := rt.Drain(gone); n != 2 {
					t.Errorf("Drain past its bound with two model turns in flight: %d left, want 2", n)
				}
				if _, _, err := rt.BeginModel(ctx, "m"); err == nil {
					t.Errorf("a model turn once the runtime drains was let begin")
				}
				drained := make(chan int, 1)
				go func() {
					n := rt.Drain(context.Background())
					order.mu.Lock()
					order.drained = true
					order.mu.Unlock()
					drained <- n
				}()
				synctest.Wait()
				select {
				case n := <-drained:
					t.Fatalf("Drain returned %d with two model turns in flight; want it to wait", n)
				default:
				}
				end(a)
				end(a) // ended twice: counted out once
				synctest.Wait()
				select {
				case n := <-drained:
					t.Fatalf("Drain returned %d with a model turn in flight; want it to wait", n)
				default:
				}
				end(b)
				if n := <-drained; n != 0 {
					t.Errorf("Drain returned %d once the turns ended, want 0", n)
				}
				order.mu.Lock()
				defer order.mu.Unlock()
				if len(order.late) > 0 || order.ended < 2 {
					t.Errorf("model frames recorded after Drain returned: %v (%d ends recorded); want both ends before", order.late, order.ended)
				}
			})
		})
	}
	t.Run("refused", func(t *testing.T) {
		rt := reach.New(&reach.Options{DefaultBudget: &reach.Budget{Turns: 1}})
		ctx, req := begin(t, rt, nil)
		defer req.End()
		_, f, err := rt.BeginModel(ctx, "m")
		if err != nil {
			t.Fatal(err)
		}
		f.EndModel(reach.TokenUsage{})
		if _, _, err := rt.BeginModel(ctx, "m"); err == nil {
			t.Fatal("a second turn under a one-turn budget was let begin")
		}
		gone, cancel := context.WithCancel(context.Background())
		cancel()
		if n := rt.Drain(gone); n != 0 {
			t.Errorf("Drain after a turn ended and one refused: %d in flight, want 0", n)
		}
	})
}
