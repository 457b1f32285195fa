package reach_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/agentreach/reach"
)

// heldApprover holds a call for an approval until its context ends (a
// stop wakes it), says so on woken, and answers pending once answer is
// closed: the test decides when the call's own answer comes. With
// pending, it answers pending at once, as an approver with no wait does.
type heldApprover struct {
	asked, woken chan struct{}
	answer       chan struct{}
	pending      bool
}

func (a heldApprover) Approve(ctx context.Context, _ *reach.Call) (reach.Decision, *reach.Error) {
	a.asked <- struct{}{}
	if !a.pending {
		<-ctx.Done()
		a.woken <- struct{}{}
		<-a.answer
	}
	return reach.NeedsApproval, &reach.Error{Code: "approval_pending", Message: "waits for approval"}
}

// holdingRedactor masks nothing. Armed, the first text it is given that
// holds the marker stops it: it says so on held, and goes on once
// release is closed. It holds what redacts the approval's expiry while
// it settles the frame.
type holdingRedactor struct {
	mu      sync.Mutex
	armed   bool
	held    chan struct{}
	release chan struct{}
}

const expiryMarker = "nobody decided in time"

func (h *holdingRedactor) Redact(b []byte) []byte { return b }

func (h *holdingRedactor) RedactString(s string) string {
	h.mu.Lock()
	hold := h.armed && strings.Contains(s, expiryMarker)
	if hold {
		h.armed = false
	}
	h.mu.Unlock()
	if hold {
		close(h.held)
		<-h.release
	}
	return s
}

// TestStopWinsOverApprovalExpiry: a soft stop ends a call's wait for its
// approval, and expires the approval (reach serve's approval queue), whose
// event settles the frame that waited (Request.SettleAwaiting). The two
// come in either order, and the frame ends with the stop's refusal
// (stopped_soft, guard authorize) whichever comes first. CI saw, once,
// TestFrameworksSoftStopWhileApprovalWaits/ai-sdk end the frame with
// approval_expired: the settle had taken the frame (its state) before the
// call's answer, and written its error after it, over the stop's.
// "settle lands after the answer" drives that order; "settle before the
// answer" looks at the frame between the two; "answered pending" is a
// call answered pending before the stop (an approver with no wait), whose
// frame only the expiry settles.
func TestStopWinsOverApprovalExpiry(t *testing.T) {
	for _, order := range []string{"settle lands after the answer", "settle before the answer", "answered pending"} {
		t.Run(order, func(t *testing.T) {
			ap := heldApprover{asked: make(chan struct{}, 1), woken: make(chan struct{}, 1), answer: make(chan struct{}),
				pending: order == "answered pending"}
			rd := &holdingRedactor{held: make(chan struct{}), release: make(chan struct{})}
			rt := reach.New(&reach.Options{Approver: ap, Redactor: rd})
			rt.MustRegister(reach.Tool{Name: "refund", Access: reach.HighRisk, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				t.Error("the refund ran")
				return json.RawMessage(`"refunded"`), nil
			}})
			ctx, req := begin(t, rt, nil)
			res := make(chan *reach.Result, 1)
			go func() { res <- call(rt, ctx, "refund", `{}`) }()
			<-ap.asked
			if ap.pending {
				if r := <-res; r.Status != reach.StatusPending {
					t.Fatalf("the call answered %s, want pending", r.ModelText())
				}
			}
			var f *reach.Frame
			for _, g := range req.Frames() {
				if g.Name == "refund" {
					f = g
				}
			}
			if f == nil || f.State() != reach.AwaitingApproval {
				t.Fatalf("the refund's frame: %v", f)
			}
			req.Stop(reach.Soft, "operator", "the user pressed stop")
			if !ap.pending {
				<-ap.woken // the call's wait ended; its answer waits for ap.answer
			}
			expiry := &reach.Error{Guard: "authorize", Type: reach.TypeApproval, Code: "approval_expired",
				Message: "The approval apr_t of this call expired: " + expiryMarker + "."}
			settled := make(chan struct{})
			switch order {
			case "settle lands after the answer":
				rd.mu.Lock()
				rd.armed = true
				rd.mu.Unlock()
				go func() {
					defer close(settled)
					req.SettleAwaiting(f.ID, reach.Cancelled, expiry, "expired (apr_t)")
				}()
				// The settle is held while it masks the expiry (it took the
				// frame before), or it is over (it took none, or ended it).
				select {
				case <-rd.held:
				case <-settled:
				}
				close(ap.answer)
				<-res
				close(rd.release)
				<-settled
			case "settle before the answer":
				req.SettleAwaiting(f.ID, reach.Cancelled, expiry, "expired (apr_t)")
				if e := f.Err(); f.State() != reach.Cancelled || e == nil || e.Code != "stopped_soft" {
					t.Errorf("settled by the expiry of a stopped request's approval, before the call's answer, the frame is %v with %+v; want the stop's refusal", f.State(), e)
				}
				close(ap.answer)
				<-res
			case "answered pending":
				req.SettleAwaiting(f.ID, reach.Cancelled, expiry, "expired (apr_t)")
			}
			if e := f.Err(); f.State() != reach.Cancelled || e == nil || e.Code != "stopped_soft" || e.Guard != "authorize" ||
				!strings.Contains(e.Message, "the user pressed stop") {
				t.Errorf("the frame is %v with %+v; want it ended by the stop where it waited for approval (stopped_soft, guard authorize)", f.State(), e)
			}
		})
	}
}
