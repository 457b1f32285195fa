package reach_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/agentreach/reach"
)

// A soft stop starts nothing new: a write that waited for its entity's
// lock (another request's write held it) when its request was stopped
// does not run once the lock is free, though it was admitted before the
// stop.
func TestSoftStopQueuedWriteDoesNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := reach.New(nil)
		var ran atomic.Int32
		entered, release := make(chan struct{}, 1), make(chan struct{})
		rt.MustRegister(reach.Tool{Name: "update_order", Access: reach.Write, Reentrancy: reach.Reentrant, Writes: []string{"order:{id}"},
			Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				if ran.Add(1) == 1 {
					entered <- struct{}{}
					<-release
				}
				return json.RawMessage(`"done"`), nil
			}})
		other, _ := begin(t, rt, nil)
		ctx, req := begin(t, rt, nil)
		results := make([]*reach.Result, 2)
		var wg sync.WaitGroup
		wg.Go(func() {
			results[0] = rt.Call(other, &reach.Call{ID: "a", Tool: "update_order", Arguments: json.RawMessage(`{"id":"O1","note":"a"}`)})
		})
		<-entered
		wg.Go(func() {
			results[1] = rt.Call(ctx, &reach.Call{ID: "b", Tool: "update_order", Arguments: json.RawMessage(`{"id":"O1","note":"b"}`)})
		})
		synctest.Wait() // b waits for the other request's lock on order:O1
		req.Stop(reach.Soft, "operator", "runaway")
		close(release)
		wg.Wait()
		if results[0].Status != reach.StatusSuccess {
			t.Errorf("the write in flight: %s, want it finished", results[0].ModelText())
		}
		if n := ran.Load(); n != 1 {
			t.Errorf("the tool ran %d times, want once: the queued write started after the soft stop", n)
		}
		if e := results[1].Error; e == nil || e.Code != "stopped_soft" || e.Guard != "execute" {
			t.Errorf("the queued write: %s, want a refusal that says the request was stopped", results[1].ModelText())
		}
	})
}

// approveLater is an Approver that permits a call once told to.
type approveLater struct {
	asked chan struct{}
	yes   chan struct{}
}

func (a approveLater) Approve(ctx context.Context, _ *reach.Call) (reach.Decision, *reach.Error) {
	a.asked <- struct{}{}
	<-a.yes
	return reach.Permit, nil
}

// Nor does a call that waited for a human's approval: approved after its
// request was soft-stopped, it is refused, not started.
func TestSoftStopApprovedLaterDoesNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ap := approveLater{asked: make(chan struct{}, 1), yes: make(chan struct{})}
		rt := reach.New(&reach.Options{Approver: ap})
		var ran atomic.Int32
		rt.MustRegister(reach.Tool{Name: "delete_all", Access: reach.HighRisk, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			ran.Add(1)
			return json.RawMessage(`"deleted"`), nil
		}})
		ctx, req := begin(t, rt, nil)
		var res *reach.Result
		var wg sync.WaitGroup
		wg.Go(func() { res = call(rt, ctx, "delete_all", `{}`) })
		<-ap.asked
		req.Stop(reach.Soft, "operator", "runaway")
		close(ap.yes)
		wg.Wait()
		if e := res.Error; ran.Load() != 0 || e == nil || e.Code != "stopped_soft" || e.Guard != "execute" {
			t.Errorf("approved after a soft stop, the call ran %d times and answered %s; want it refused, not run", ran.Load(), res.ModelText())
		}
	})
}
