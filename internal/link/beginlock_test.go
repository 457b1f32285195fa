package link

import (
	"context"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// joinProbe is a request recorder whose requests other runtimes may run
// (reach.RequestJoiner, as internal/cluster's on PostgreSQL): its
// JoinRequest stands for the store's join, and reports whether Owned's
// lock was held while it ran.
type joinProbe struct {
	q      *Owned
	held   []string // the ids whose join ran under q.mu
	joined map[string]int
}

func (p *joinProbe) JoinRequest(ctx context.Context, o *reach.RequestOptions) (time.Time, error) {
	if p.q.mu.TryLock() {
		p.q.mu.Unlock()
	} else {
		p.held = append(p.held, o.ID)
	}
	p.joined[o.ID]++
	return time.Time{}, nil
}
func (p *joinProbe) RequestBegan(context.Context, *reach.Request) error          { return nil }
func (p *joinProbe) RequestStopped(context.Context, *reach.Request, reach.Cause) {}
func (p *joinProbe) RequestEnded(context.Context, *reach.Request)                {}

// The store's join of a request a call names, or of a new one, runs
// without Owned's lock: on several instances it may wait up to a TTL, and
// every call of the gateway (another session's, another request's) waited
// for the lock behind it. A second call naming the request joins it as
// begun, once.
func TestBeginJoinsWithoutTheLock(t *testing.T) {
	p := &joinProbe{joined: map[string]int{}}
	rt := reach.New(&reach.Options{Requests: p})
	q := NewOwned(t.Context(), rt, time.Hour, Budgets{})
	p.q = q
	t.Cleanup(q.EndAll)
	for _, tg := range []Target{{Request: "r-named"}, {}} {
		_, _, done, err := q.CallContext(context.Background(), tg, nil)
		if err != nil {
			t.Fatal(err)
		}
		done()
	}
	if len(p.held) > 0 {
		t.Errorf("the store's join ran under Owned's lock for %q; want none", p.held)
	}
	_, r, done, err := q.CallContext(context.Background(), Target{Request: "r-named"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done()
	if r.ID() != "r-named" || p.joined["r-named"] != 1 {
		t.Errorf("a second call naming r-named: %s, joined %d times; want the same request, joined once", r.ID(), p.joined["r-named"])
	}
}
