package modelproxy

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
)

// ledgerDown is a shared ledger whose store is open but does not answer
// while down: every debit and release is refused.
type ledgerDown struct {
	mu       sync.Mutex
	down     bool
	attempts int
	tokens   int64
	held     map[string]bool
}

func (l *ledgerDown) attempt() error {
	l.attempts++
	if l.down {
		return errors.New("the store did not answer")
	}
	return nil
}

func (l *ledgerDown) AdmitTurn(context.Context, *reach.Request) (int64, bool, error) {
	return 0, false, nil
}

func (l *ledgerDown) AdmitTurnLeft(context.Context, *reach.Request) (SharedLeft, error) {
	return SharedLeft{}, nil
}

func (l *ledgerDown) HoldTurn(context.Context, *reach.Request, string, Spend, Spend, Spend) (bool, SharedLeft, error) {
	return true, SharedLeft{}, nil
}

func (l *ledgerDown) Spend(_ context.Context, _ *reach.Request, tokens, _ int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.attempt(); err != nil {
		return err
	}
	l.tokens += tokens
	return nil
}

func (l *ledgerDown) Unhold(_ context.Context, turn string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.attempt(); err != nil {
		return err
	}
	delete(l.held, turn)
	return nil
}

// TestChargesWhileTheStoreIsUnreachable: the charges of the turns that
// ended while the shared ledger's store was open but did not answer are
// made again from one goroutine, the store asked once a pause, not by each
// turn from a goroutine of its own (one per turn: as many goroutines, and
// as many attempts a pause, as turns had ended meanwhile); once it answers,
// every charge is debited once, and then its hold let go. In a bubble
// (testing/synctest), the hour passes in no time, and the attempts are
// counted once every goroutine is blocked.
func TestChargesWhileTheStoreIsUnreachable(t *testing.T) {
	const turns = 100
	rt := reach.New(&reach.Options{DisableLoopGuard: true})
	_, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	log := slog.New(slog.DiscardHandler)
	synctest.Test(t, func(t *testing.T) {
		l := &ledgerDown{down: true, held: map[string]bool{}}
		var r retrier
		var letGo atomic.Int32
		for i := range turns {
			turn := "turn-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			l.mu.Lock()
			l.held[turn] = true
			l.mu.Unlock()
			chargeShared(&r, log, l, req, 135, 0, unholdWait, func() {
				letGo.Add(1)
				letGoShared(&r, log, l, "r1", turn, unholdWait)
			})
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		l.mu.Lock()
		attempts := l.attempts
		l.down = false // the store answers again
		l.mu.Unlock()
		// One attempt a pause, the pause doubling up to unholdWait: some
		// 360 an hour, beside the turns' first attempts.
		if most := turns + int(time.Hour/unholdWait) + 20; attempts > most {
			t.Errorf("%d attempts in an hour of a store that did not answer, for %d turns' charges; want at most %d (one a pause)", attempts, turns, most)
		}
		time.Sleep(2 * unholdWait)
		synctest.Wait()
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.tokens != turns*135 || letGo.Load() != turns || len(l.held) != 0 {
			t.Errorf("once the store answered: %d tokens debited, %d holds let go after their charge, %d still held; want %d, %d, none",
				l.tokens, letGo.Load(), len(l.held), turns*135, turns)
		}
	})
}
