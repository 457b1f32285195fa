package reach_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
)

// waitingApprover holds a call for wait, as reach serve's approval queue
// does with approvals.wait, and answers pending when its context ends or
// the wait runs out with no decision.
type waitingApprover struct {
	wait  time.Duration
	asked chan struct{}
}

func (a waitingApprover) Approve(ctx context.Context, _ *reach.Call) (reach.Decision, *reach.Error) {
	a.asked <- struct{}{}
	select {
	case <-ctx.Done():
	case <-time.After(a.wait):
	}
	return reach.NeedsApproval, &reach.Error{Code: "approval_pending", Message: "waits for approval"}
}

// A stop, soft or not, ends a call's wait for an approval at once: the
// call is refused with the stop, and its tool never runs. A soft stop
// left the call waiting for the rest of the approval's wait (an agent held
// 30 s by reach serve's approvals.wait after the user pressed stop), to be
// refused or answered pending at its end. So too for a call made through
// one runtime in a request begun by another (the request's context handed
// to a second runtime of the process): its wait was kept in the calling
// runtime's table, the stop looked in the request's, and the call waited
// until the request's wall budget (10 min) ended it.
func TestStopEndsApprovalWait(t *testing.T) {
	for _, mode := range []reach.StopMode{reach.Soft, reach.Cancel} {
		for _, other := range []bool{false, true} {
			name := mode.String()
			if other {
				name += "/request of another runtime"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ap := waitingApprover{wait: time.Hour, asked: make(chan struct{}, 1)}
					rt := reach.New(&reach.Options{Approver: ap})
					var ran atomic.Int32
					rt.MustRegister(reach.Tool{Name: "delete_all", Access: reach.HighRisk, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
						ran.Add(1)
						return json.RawMessage(`"deleted"`), nil
					}})
					owner := rt
					if other {
						owner = reach.New(nil)
					}
					ctx, req := begin(t, owner, nil)
					var res *reach.Result
					var took time.Duration
					var wg sync.WaitGroup
					wg.Go(func() {
						start := time.Now()
						res = call(rt, ctx, "delete_all", `{}`)
						took = time.Since(start)
					})
					<-ap.asked
					req.Stop(mode, "operator", "the user pressed stop")
					wg.Wait()
					if took != 0 { // the bubble's clock moves only when every goroutine waits: a timer ended the wait, not the stop
						t.Errorf("the call waited %v after the stop (a timer's, not the stop's end)", took)
					}
					if e := res.Error; ran.Load() != 0 || e == nil || e.Code != "stopped_"+mode.String() || e.Type != reach.TypeStopped {
						t.Errorf("the call ran %d times and answered %s; want it refused with the stop", ran.Load(), res.ModelText())
					}
				})
			})
		}
	}
}
