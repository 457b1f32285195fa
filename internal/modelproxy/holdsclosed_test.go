package modelproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// ledgerClosing is a shared ledger whose store refuses the first blips
// attempts (it does not answer), then is closed (store.ErrClosed, as a
// gateway that stops closes it), until reopened: a test's way to end a
// retry loop that did not end on its own.
type ledgerClosing struct {
	mu       sync.Mutex
	blips    int
	attempts int
	reopened bool
}

func (l *ledgerClosing) attempt() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts++
	switch {
	case l.reopened:
		return nil
	case l.attempts <= l.blips:
		return errors.New("the store did not answer")
	}
	return fmt.Errorf("debiting the budgets of requests [r1]: %w", store.ErrClosed)
}

func (l *ledgerClosing) made() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.attempts
}

func (l *ledgerClosing) reopen() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reopened = true
}

func (l *ledgerClosing) AdmitTurn(context.Context, *reach.Request) (int64, bool, error) {
	return 0, false, nil
}

func (l *ledgerClosing) Spend(context.Context, *reach.Request, int64, int64) error {
	return l.attempt()
}

func (l *ledgerClosing) AdmitTurnLeft(context.Context, *reach.Request) (SharedLeft, error) {
	return SharedLeft{}, nil
}

func (l *ledgerClosing) HoldTurn(context.Context, *reach.Request, string, Spend, Spend, Spend) (bool, SharedLeft, error) {
	return true, SharedLeft{}, nil
}

func (l *ledgerClosing) Unhold(context.Context, string) error { return l.attempt() }

// TestChargeEndsOnAClosedStore: a turn's charge, or its hold's release,
// that the store refused is tried again until it is taken, but not past
// the store's close: a closed store never takes one, and before, the
// retry's goroutine outlived it, one attempt every unholdWait for as long
// as the process ran (and the turn's hold was never let go). In a bubble
// (testing/synctest), an hour passes in no time: the attempts are counted
// once every goroutine is blocked, none that sleeps a real while.
func TestChargeEndsOnAClosedStore(t *testing.T) {
	rt := reach.New(&reach.Options{DisableLoopGuard: true})
	_, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	log := slog.New(slog.DiscardHandler)
	for _, blips := range []int{0, 2} {
		t.Run(fmt.Sprintf("charge after %d blips", blips), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &ledgerClosing{blips: blips}
				var letGo atomic.Int32
				chargeShared(&retrier{}, log, l, req, 135, 0, unholdWait, func() { letGo.Add(1) })
				time.Sleep(time.Hour)
				synctest.Wait()
				attempts := l.made()
				l.reopen() // a loop still running ends at its next attempt
				time.Sleep(2 * unholdWait)
				if attempts != blips+1 || letGo.Load() != 1 {
					t.Errorf("a charge whose store closed after %d blips: %d attempts in an hour, the hold let go %d times; want %d attempts, then let go once",
						blips, attempts, letGo.Load(), blips+1)
				}
			})
		})
		t.Run(fmt.Sprintf("release after %d blips", blips), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &ledgerClosing{blips: blips}
				letGoShared(&retrier{}, log, l, "r1", "turn-1", unholdWait)
				time.Sleep(time.Hour)
				synctest.Wait()
				attempts := l.made()
				l.reopen()
				time.Sleep(2 * unholdWait)
				if attempts != blips+1 {
					t.Errorf("a hold's release whose store closed after %d blips: %d attempts in an hour; want %d", blips, attempts, blips+1)
				}
			})
		})
	}
}
