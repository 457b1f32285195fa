package reach

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// lateParent is a parent whose deadline passed but whose timer has not run
// yet (the moments ea93f9c waits for): Err is nil until end is called.
type lateParent struct {
	context.Context // values: none
	deadline        time.Time
	done            chan struct{}
	err             error
}

func (p *lateParent) Deadline() (time.Time, bool) { return p.deadline, true }
func (p *lateParent) Done() <-chan struct{}       { return p.done }
func (p *lateParent) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}
func (p *lateParent) end() { p.err = context.DeadlineExceeded; close(p.done) }

// TestReview8SoonerParentDeadlinePassedOnceMade: once the parent's
// sooner deadline passed, the attempt's Err does not report it running,
// whether or not its context was made (by a Done: net.Dialer's, on a new
// connection of the wire client, before the exchange set that deadline on
// the socket): a caller that saw the deadline pass on its socket reads
// the parent's end, not nil (which the wire client takes for the
// upstream failing: unavailable, and no notifications/cancelled).
func TestReview8SoonerParentDeadlinePassedOnceMade(t *testing.T) {
	for _, made := range []bool{false, true} {
		name := "not made"
		if made {
			name = "made"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &lateParent{Context: context.Background(), deadline: time.Now().Add(time.Second), done: make(chan struct{})}
				a := newAttempt(p, &Frame{}, nil, time.Minute)
				if made {
					a.Done()
				}
				time.Sleep(2 * time.Second) // past the parent's deadline, its timer not run
				got := make(chan error, 1)
				go func() { got <- a.Err() }()
				synctest.Wait()
				select {
				case err := <-got:
					t.Errorf("Err %v before the parent's due timer ended it, want it to wait for that end", err)
					p.end()
				default:
					p.end()
					if err := <-got; err != context.DeadlineExceeded {
						t.Errorf("Err %v, want DeadlineExceeded", err)
					}
				}
				a.end()
			})
		})
	}
}
