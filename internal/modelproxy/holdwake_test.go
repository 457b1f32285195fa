package modelproxy

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// otherInstances is the shared ledger as a turn of this instance sees it
// while turns of others hold 700 of its 1,000 tokens, until they let go;
// watch is a HoldWatcher's, whose wake is letGo.
type otherInstances struct {
	others  atomic.Int64
	asked   chan struct{} // a hold asked for (buffered)
	letGo   chan struct{}
	mu      sync.Mutex
	watches int // watching now
	watched int // ever
}

func newOtherInstances() *otherInstances {
	o := &otherInstances{asked: make(chan struct{}, 100), letGo: make(chan struct{})}
	o.others.Store(700)
	return o
}

func (o *otherInstances) hold(tokens, cost, needTokens, needCost int64) (bool, SharedLeft, error) {
	// Said once answered: a test that lets go after an ask it saw lets go
	// after that ask read the ledger (said before, a turn preempted between
	// the two read the ledger already let go of, and was admitted at once).
	defer func() { o.asked <- struct{}{} }()
	if n := o.others.Load(); n > 0 && tokens > 1000-n {
		return false, SharedLeft{Tokens: 1000, TokensLimited: true, FreeTokens: 1000 - n, Known: true}, nil
	}
	return true, SharedLeft{}, nil
}

func (o *otherInstances) watch(wake <-chan struct{}) func() (<-chan struct{}, func()) {
	return func() (<-chan struct{}, func()) {
		o.mu.Lock()
		o.watches++
		o.watched++
		o.mu.Unlock()
		var once sync.Once
		return wake, func() {
			once.Do(func() {
				o.mu.Lock()
				o.watches--
				o.mu.Unlock()
			})
		}
	}
}

// A turn that the other instances' holds leave too little waits for
// them to let go, and is woken by the word that one did (HoldWatcher), not
// by a poll: with the fallback poll set to an hour it proceeds as soon as
// they let go. Its watches are all stopped once it has its hold.
func TestHolds25WaitingTurnWokenByLetGo(t *testing.T) {
	defer func(d time.Duration) { sharedFallback = d }(sharedFallback)
	sharedFallback = time.Hour
	rt := reach.New(nil)
	_, root, err := rt.Begin(context.Background(), &reach.RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer root.End()
	o := newOtherInstances()
	type taken struct {
		cap int64
		err error
	}
	done := make(chan taken, 1)
	var h holds
	go func() {
		cap, _, release, err := h.take(context.Background(), root,
			ask{prompt: 100, asked: 500, minimum: 1, wait: time.Hour, watch: o.watch(o.letGo)},
			SharedLeft{Tokens: 1000, TokensLimited: true}, o.hold)
		if err == nil {
			release()
		}
		done <- taken{cap, err}
	}()
	// Refused twice (each ask said once it was answered): once at the cap
	// it was given, once more, watching, at what the shared ledger said
	// (the same): it waits from then on.
	<-o.asked
	<-o.asked
	o.others.Store(0)
	close(o.letGo)
	got := <-done
	if got.err != nil || got.cap != 500 {
		t.Fatalf("the turn once the others let go: cap %d, %v; want 500", got.cap, got.err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.watched < 2 || o.watches != 0 {
		t.Fatalf("%d watches begun, %d not stopped; want one per ask after the first refusal, all stopped", o.watched, o.watches)
	}
}

// A turn the shared ledger admits at once watches nothing: the watch
// (HoldWatcher) is begun only once it was refused, before it asks again.
// Before, every turn with a token budget began one before each ask, and
// nearly every turn is admitted at once.
func TestHoldsTurnAdmittedAtOnceWatchesNothing(t *testing.T) {
	rt := reach.New(nil)
	_, root, err := rt.Begin(context.Background(), &reach.RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer root.End()
	o := newOtherInstances()
	o.others.Store(0) // no turn of another instance holds anything
	var h holds
	cap, _, release, err := h.take(context.Background(), root,
		ask{prompt: 100, asked: 500, minimum: 1, wait: time.Hour, watch: o.watch(o.letGo)},
		SharedLeft{Tokens: 1000, TokensLimited: true}, o.hold)
	if err != nil || cap != 500 {
		t.Fatalf("the turn on an empty ledger: cap %d, %v; want 500", cap, err)
	}
	release()
	if n := len(o.asked); n != 1 {
		t.Fatalf("the shared ledger was asked %d times; want once", n)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.watched != 0 {
		t.Fatalf("%d watches begun for a turn admitted at once; want none", o.watched)
	}
}
