package link

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// heldJoin is a request recorder whose join of request "r-held" waits
// until release is closed, then fails with fail (nil: joins).
type heldJoin struct {
	entered chan struct{}
	release chan struct{}
	fail    error
}

func (p *heldJoin) JoinRequest(ctx context.Context, o *reach.RequestOptions) (time.Time, error) {
	if o.ID == "r-held" {
		p.entered <- struct{}{}
		<-p.release
		return time.Time{}, p.fail
	}
	return time.Time{}, nil
}
func (p *heldJoin) RequestBegan(context.Context, *reach.Request) error          { return nil }
func (p *heldJoin) RequestStopped(context.Context, *reach.Request, reach.Cause) {}
func (p *heldJoin) RequestEnded(context.Context, *reach.Request)                {}

// While a begin is in flight off the lock, it counts as one of its
// principal's requests: a call that finds the principal at the bound is
// refused, and the refusal counts it (it said "0 requests running" while
// the bound was full); a second call naming the request being begun waits
// for it, and wakes when it fails, refused too, where it begins the
// request itself; once the begin is over, its slot is free again.
func TestBeginInFlightCountsAndWakes(t *testing.T) {
	p := &heldJoin{entered: make(chan struct{}, 2), release: make(chan struct{}), fail: errors.New("the store refused the join")}
	rt := reach.New(&reach.Options{Requests: p})
	q := NewOwned(t.Context(), rt, time.Hour, Budgets{}).Bound(1)
	t.Cleanup(q.EndAll)
	first := make(chan error, 1)
	go func() {
		_, _, done, err := q.CallContext(context.Background(), Target{Request: "r-held"}, nil)
		if err == nil {
			done()
		}
		first <- err
	}()
	<-p.entered
	_, _, _, err := q.CallContext(context.Background(), Target{Request: "r-other"}, nil)
	if err == nil || !strings.Contains(err.Error(), "has 1 requests running") {
		t.Errorf("a call at the bound while a begin is in flight: %v; want refused, counting the begin (1 request)", err)
	}
	second := make(chan error, 1)
	go func() {
		_, _, done, err := q.CallContext(context.Background(), Target{Request: "r-held"}, nil)
		if err == nil {
			done()
		}
		second <- err
	}()
	close(p.release) // the first begin fails; the second call then begins r-held itself
	if err := <-first; err == nil {
		t.Error("the call whose join failed was not refused")
	}
	select {
	case <-p.entered:
	case <-time.After(time.Minute):
		t.Fatal("the call waiting for r-held's begin did not wake when it failed")
	}
	if err := <-second; err == nil {
		t.Error("the second call's join, failed too, was not refused")
	}
	_, r, done, err := q.CallContext(context.Background(), Target{Request: "r-other"}, nil)
	if err != nil {
		t.Fatalf("a call once the failed begins are over: %v; want their slot free", err)
	}
	done()
	if r.ID() != "r-other" {
		t.Errorf("the call began %s; want r-other", r.ID())
	}
}
