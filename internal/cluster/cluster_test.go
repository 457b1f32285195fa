package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) {
	// The tests here drive a life's heartbeats themselves until Start, or
	// hold them (a paused process); TestStartingLifeHeartbeats turns
	// New's on.
	earlyBeats = false
	os.Exit(pgtest.Main(m))
}

// Instance a loses the connection that holds its name; a second process
// named a starts meanwhile and is let in. The second does not take the
// first's life for dead while it heartbeats (a fence); the first finds its
// name taken, stops heartbeating and admitting work, and only then, a TTL
// later, is dead to the others (issue 17 review, defect 4).
func TestNameLostToASecondProcess(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	st1, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st1.Close()
	c1, err := New(ctx, &Options{Store: st1, Instance: "a", TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The connection that holds a's advisory lock drops (a network blip).
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND granted`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminating the lock's backend: %d %v", n, err)
	}
	st2, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	c2, err := New(ctx, &Options{Store: st2, Instance: "a", TTL: 2 * time.Second})
	if err != nil {
		t.Skipf("the first a took its name again before the second asked: %v", err)
	}
	defer c2.Close()
	claimed := time.Now().Add(-time.Minute)
	// Before the first finds out, it heartbeats: the second must not
	// take it for dead.
	if err := c1.beat(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c2.beat(ctx); err != nil {
		t.Fatal(err)
	}
	dead, _ := c2.Dead(ctx)
	if !c2.Alive(c1.Owner(), claimed) || slices.Contains(dead, c1.Owner()) {
		t.Fatalf("%s heartbeats, and %s takes it for dead (dead: %v)", c1.Owner(), c2.Owner(), dead)
	}
	// The first tries to take its name again, finds it taken, and stops.
	if err := c1.Start(nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c1.Lost():
	case <-time.After(15 * time.Second):
		t.Fatal("the first a did not find its name taken")
	}
	for deadline := time.Now().Add(5 * time.Second); !c1.lost.Load() && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	if err := c1.beat(ctx); !errors.Is(err, errLost) {
		t.Fatalf("the first a heartbeats on after losing its name: %v", err)
	}
	if _, _, err := c1.AdmitTurn(ctx, nil); err == nil {
		t.Fatal("the first a admits a model turn after losing its name")
	}
	// A TTL after its last heartbeat, the second takes it for dead.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := c2.beat(ctx); err != nil {
			t.Fatal(err)
		}
		if !c2.Alive(c1.Owner(), claimed) {
			return
		}
	}
	t.Fatalf("%s stopped heartbeating, and %s still takes it for alive", c1.Owner(), c2.Owner())
}

// A request running on b is ended by its client through a while b does
// not listen yet (or is cut off): the wake-up is lost, yet b ends its part
// once it listens, and the request is stored ended. (Missing that, a
// request that a client ended through another instance just after b
// started ran on; issue 17, TestInstancesEndAcross.)
func TestEndMissedBeforeListening(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoInstances(t, 2*time.Second)
	stA, stB := a.st, b.st
	rt := reach.New(&reach.Options{Requests: b.Recorder(durable.New(stB, nil, nil))})
	_, req, err := rt.Begin(ctx, &reach.RequestOptions{ID: "r-far"})
	if err != nil {
		t.Fatal(err)
	}
	if found, err := a.End(ctx, "r-far", nil); err != nil || !found {
		t.Fatalf("End through a = %v, %v", found, err)
	}
	if ids, err := stB.Settled(ctx, b.Owner()); err != nil || !slices.Equal(ids, []string{"r-far"}) {
		t.Fatalf("Settled(%s) = %v, %v; want r-far", b.Owner(), ids, err)
	}
	if err := b.Start(rt, nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-req.Context().Done():
	case <-time.After(20 * time.Second):
		t.Fatal("b never ended its part of r-far, which its client ended through a before b listened")
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, err := stA.GetRequest(ctx, "r-far")
		if err != nil {
			t.Fatal(err)
		}
		if r.State == "ended" && !r.Ended.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("r-far is stored %s (ended %v), want ended", r.State, r.Ended)
		}
	}
	if ids, err := stB.Settled(ctx, b.Owner()); err != nil || len(ids) != 0 {
		t.Fatalf("Settled(%s) = %v, %v after b left r-far; want none", b.Owner(), ids, err)
	}
}

// pausedBegin is b's recorder with a pause in every root's RequestBegan:
// after JoinRequest wrote b's part of the request, before b registers it
// (the window of issue 16, item 4).
type pausedBegin struct {
	*Recorder
	paused  chan string   // the id whose begin waits
	release chan struct{} // lets it go on
}

func (p *pausedBegin) RequestBegan(ctx context.Context, q *reach.Request) error {
	if q.Parent() == nil {
		p.paused <- q.ID()
		<-p.release
	}
	return p.Recorder.RequestBegan(ctx, q)
}

// endFleet is two instances on one store: a, which does not listen (its
// parts end only when the test ends them), and b, which listens; their
// TTL is long, so that neither is taken for dead while a test runs.
type endFleet struct {
	st       [2]*postgres.Store
	a, b     *Cluster
	rtA, rtB *reach.Runtime
	recB     *pausedBegin
	ownedB   *link.Owned // b's requests as the gateway owns them, ended by OnEnd as the gateway wires it
	endedB   chan string // the requests b was told to end (OnEnd)
	heardB   chan string // the approvals b was woken for (barrier)
	conn     *pgx.Conn
	n        int
}

func newEndFleet(t *testing.T) *endFleet {
	t.Helper()
	ctx := context.Background()
	f := &endFleet{heardB: make(chan string, 64), endedB: make(chan string, 64)}
	var url string
	url, f.a, f.b = twoInstances(t, time.Minute)
	f.st = [2]*postgres.Store{f.a.st, f.b.st}
	f.rtA = reach.New(&reach.Options{Requests: f.a.Recorder(durable.New(f.st[0], nil, nil))})
	f.recB = &pausedBegin{Recorder: f.b.Recorder(durable.New(f.st[1], nil, nil)), paused: make(chan string, 1), release: make(chan struct{})}
	f.rtB = reach.New(&reach.Options{Requests: f.recB})
	f.ownedB = link.NewOwned(context.Background(), f.rtB, time.Hour, link.Budgets{})
	t.Cleanup(f.ownedB.EndAll)
	f.b.OnEnd(func(id string) {
		select {
		case f.endedB <- id:
		default:
		}
		f.ownedB.End(id)
	})
	heard := func(id string) {
		select {
		case f.heardB <- id:
		default: // never block b's listener (the first barrier's copies)
		}
	}
	if err := f.b.Start(f.rtB, heard, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	f.conn = conn
	f.barrier(t) // b listens
	return f
}

// barrier returns once b's listener handled every wake-up sent before it:
// it wakes b for an approval and waits for it (one listener handles the
// wake-ups in order). Until b listens, a wake-up is lost: the first
// barrier sends its own again until b handles it.
func (f *endFleet) barrier(t *testing.T) {
	t.Helper()
	f.n++
	id := fmt.Sprintf("barrier-%d", f.n)
	deadline := time.After(30 * time.Second)
	for {
		if _, err := f.conn.Exec(context.Background(), `SELECT pg_notify('reach', $1)`, "approval:"+id); err != nil {
			t.Fatal(err)
		}
		again := time.After(time.Hour)
		if f.n == 1 {
			again = time.After(50 * time.Millisecond)
		}
	wait:
		for {
			select {
			case got := <-f.heardB:
				if got == id {
					return
				}
			case <-again:
				break wait
			case <-deadline:
				t.Fatalf("b's listener never handled %s", id)
			}
		}
	}
}

// begun is what a Begin on b returned.
type begun struct {
	req *reach.Request
	err error
}

// startB begins request id on b in a goroutine of its own, which sends
// what Begin returned.
func (f *endFleet) startB(id string) <-chan begun {
	done := make(chan begun, 1)
	go func() {
		_, req, err := f.rtB.Begin(context.Background(), &reach.RequestOptions{ID: id})
		done <- begun{req, err}
	}()
	return done
}

// beginB begins request id on b, its RequestBegan paused until resume is
// called; resume returns what Begin returned.
func (f *endFleet) beginB(t *testing.T, id string) (resume func() (*reach.Request, error)) {
	t.Helper()
	done := f.startB(id)
	select {
	case got := <-f.recB.paused:
		if got != id {
			t.Fatalf("b began %s, want %s", got, id)
		}
	case b := <-done:
		t.Fatalf("b's begin of %s returned before registering it: %v", id, b.err)
	}
	return func() (*reach.Request, error) {
		f.recB.release <- struct{}{}
		b := <-done
		return b.req, b.err
	}
}

// beginBThrough begins request id on b, letting its RequestBegan go on
// if the begin comes that far, and returns what Begin returned.
func (f *endFleet) beginBThrough(t *testing.T, id string) (*reach.Request, error) {
	t.Helper()
	done := f.startB(id)
	select {
	case <-f.recB.paused:
		f.recB.release <- struct{}{}
	case b := <-done:
		return b.req, b.err
	}
	b := <-done
	return b.req, b.err
}

// state is request id as stored.
func (f *endFleet) state(t *testing.T, id string) string {
	t.Helper()
	r, err := f.st[0].GetRequest(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r.State
}

// beginA begins request id on a (as opts say, the id set here), as a
// client's first call there does.
func (f *endFleet) beginA(t *testing.T, opts reach.RequestOptions, id string) *reach.Request {
	t.Helper()
	opts.ID = id
	_, req, err := f.rtA.Begin(context.Background(), &opts)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// endThroughA ends request id through a, as its client does.
func (f *endFleet) endThroughA(t *testing.T, id string) {
	t.Helper()
	if found, err := f.a.End(context.Background(), id, nil); err != nil || !found {
		t.Fatalf("End of %s through a = %v, %v", id, found, err)
	}
}

// wantEnded checks that b's begin of a request its client ended was
// refused as ended, leaving nothing running on b.
func wantEnded(t *testing.T, f *endFleet, id string, req *reach.Request, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("b's part of %s, which its client ended through a, was begun and runs on (context: %v)", id, req.Context().Err())
	}
	if re, ok := errors.AsType[*reach.Error](err); !ok || re.Code != "request_ended" {
		t.Fatalf("b's begin of %s = %v, want the refusal request_ended", id, err)
	}
	if r, ok := f.rtB.Lookup(id); ok && r.State() == reach.RequestRunning {
		t.Fatalf("%s runs on b after its begin was refused", id)
	}
}

// A request runs on a; its client ends it through a while its first call
// on b is starting: b's part was written (JoinRequest) but not yet
// registered when b hears the end. b's begin is refused as ended, b leaves
// the request, and once a's part ends it is stored ended. (Missing that,
// the end found nothing to end on b, and b's part ran on.)
func TestEndWhileJoining(t *testing.T) {
	f := newEndFleet(t)
	reqA := f.beginA(t, reach.RequestOptions{}, "r-join")
	resume := f.beginB(t, "r-join") // b joined r-join; not registered yet
	f.endThroughA(t, "r-join")
	f.barrier(t) // b heard the end, before its part was registered
	req, err := resume()
	wantEnded(t, f, "r-join", req, err)
	reqA.End()
	if s := f.state(t, "r-join"); s != "ended" {
		t.Fatalf("r-join is stored %s once a's part ended, want ended", s)
	}
}

// The end comes first: b hears it, then its first call of the request
// joins it while a's part still runs (a has not ended it yet). b's begin
// is refused as ended: b does not run a request its client ended.
func TestEndHeardBeforeJoining(t *testing.T) {
	f := newEndFleet(t)
	reqA := f.beginA(t, reach.RequestOptions{}, "r-late")
	f.endThroughA(t, "r-late")
	f.barrier(t) // b heard the end, holding no part of r-late
	req, err := f.beginBThrough(t, "r-late")
	wantEnded(t, f, "r-late", req, err)
	reqA.End()
	if s := f.state(t, "r-late"); s != "ended" {
		t.Fatalf("r-late is stored %s once a's part ended, want ended", s)
	}
}

// An end b heard is of the request as it ran then: once it has ended on
// every instance, a call naming its id on b begins it again, and the end
// heard before does not end the new one.
func TestEndHeardThenBegunAgain(t *testing.T) {
	f := newEndFleet(t)
	reqA := f.beginA(t, reach.RequestOptions{}, "r-again")
	f.endThroughA(t, "r-again")
	reqA.End()
	f.barrier(t) // b heard the end
	req, err := f.beginB(t, "r-again")()
	if err != nil {
		t.Fatalf("b's begin of r-again, begun again after it ended: %v", err)
	}
	if err := req.Context().Err(); err != nil || req.State() != reach.RequestRunning {
		t.Fatalf("r-again begun again on b is %s (%v), want running", req.State(), err)
	}
	if s := f.state(t, "r-again"); s != "running" {
		t.Fatalf("r-again begun again is stored %s, want running", s)
	}
	req.End()
}

// The ends an instance remembers are few and brief: one heard a TTL ago
// is forgotten, and when more than maxHeard come within a TTL they are all
// forgotten and, for a TTL, every part registered asks the store.
func TestHeardBounded(t *testing.T) {
	c := &Cluster{ttl: time.Minute, heard: map[string]time.Time{}}
	now := time.Now()
	c.hear("old", now.Add(-2*c.ttl))
	c.hear("new", now)
	if c.heardLately("old") || !c.heardLately("new") || c.heardLately("never") {
		t.Fatalf("heardLately old, new, never = %v, %v, %v; want false, true, false",
			c.heardLately("old"), c.heardLately("new"), c.heardLately("never"))
	}
	if _, ok := c.heard["old"]; ok {
		t.Fatal("an end heard a TTL ago is still remembered")
	}
	for i := len(c.heard); i < maxHeard; i++ {
		c.hear(fmt.Sprint(i), now)
	}
	if len(c.heard) != maxHeard || !c.deaf.IsZero() {
		t.Fatalf("%d ends remembered (deaf until %v), want %d", len(c.heard), c.deaf, maxHeard)
	}
	c.hear("one more", now)
	if len(c.heard) != 1 || !c.heardLately("one more") || !c.heardLately("never") {
		t.Fatalf("past %d ends: %d remembered, heardLately(never) = %v; want 1 and true (every part asks)", maxHeard, len(c.heard), c.heardLately("never"))
	}
	c.deaf = now.Add(-time.Second)
	if c.heardLately("never") {
		t.Fatal("a TTL after the ends were forgotten, a part still asks the store")
	}
}

// The same through the requests the gateway owns (link.Owned, whose begins
// and ends take one lock; OnEnd as the gateway sets it): b's listener,
// told to end the request, waits for the begin under way, which is
// refused; neither waits for the other for good.
func TestEndWhileJoiningOwned(t *testing.T) {
	ctx := context.Background()
	f := newEndFleet(t)
	reqA := f.beginA(t, reach.RequestOptions{Principal: link.LocalPrincipal}, "r-owned")
	called := make(chan error, 1)
	go func() {
		_, _, done, err := f.ownedB.CallContext(ctx, link.Target{Request: "r-owned"}, nil)
		if done != nil {
			done()
		}
		called <- err
	}()
	if got := <-f.recB.paused; got != "r-owned" {
		t.Fatalf("b began %s, want r-owned", got)
	}
	f.endThroughA(t, "r-owned")
	select { // b heard the end; its listener waits for the begin to end the owned request
	case id := <-f.endedB:
		if id != "r-owned" {
			t.Fatalf("b was told to end %s, want r-owned", id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("b never heard the end of r-owned")
	}
	f.recB.release <- struct{}{}
	err := <-called
	if le, ok := errors.AsType[*link.Error](err); !ok || le.Code != "request_ended" {
		t.Fatalf("b's call in r-owned, which its client ended through a as it began: %v, want the refusal request_ended", err)
	}
	f.barrier(t) // b's listener goes on
	if r, ok := f.rtB.Lookup("r-owned"); ok && r.State() == reach.RequestRunning {
		t.Fatal("r-owned runs on b after its begin was refused")
	}
	reqA.End()
	if s := f.state(t, "r-owned"); s != "ended" {
		t.Fatalf("r-owned is stored %s once a's part ended, want ended", s)
	}
}

// The end came while b was not listening (it restarted, or its connection
// was down), or b heard it more than a TTL ago while a's part still runs
// (a call there that does not return): b remembers no end of the request
// when its first call joins it. b's begin is refused as ended all the
// same: the store does not let a request its client ended be joined.
func TestEndNotHeardBeforeJoining(t *testing.T) {
	f := newEndFleet(t)
	reqA := f.beginA(t, reach.RequestOptions{}, "r-unheard")
	f.endThroughA(t, "r-unheard")
	f.barrier(t)
	f.b.mu.Lock()
	clear(f.b.heard) // forgotten, as a TTL later or by a new life of b
	f.b.mu.Unlock()
	req, err := f.beginBThrough(t, "r-unheard")
	wantEnded(t, f, "r-unheard", req, err)
	reqA.End()
	if s := f.state(t, "r-unheard"); s != "ended" {
		t.Fatalf("r-unheard is stored %s once a's part ended, want ended", s)
	}
}

// A sub-agent's budget is carved from what its parent has left; its calls
// count for the parent too. Instance a runs request p and its sub-agent
// c1, then is killed (abandoned: what it knew in memory is lost); b joins
// p (within the TTL, as another instance or a's next life does), and
// carves c2 from p as b knows it, which has spent nothing there. p and its
// children together still never pass p's budget: the shared ledger of p
// holds what a's calls spent, and each call of c2 is admitted against it.
func TestCarveAcrossAKill(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoInstances(t, time.Minute)
	var rts [2]*reach.Runtime
	var sts [2]*postgres.Store
	for i, c := range []*Cluster{a, b} {
		rec := c.Recorder(durable.New(c.st, nil, nil))
		rts[i], sts[i] = reach.New(&reach.Options{Requests: rec, Middleware: []reach.Middleware{c.Admission()}, DisableLoopGuard: true}), c.st
		rts[i].MustRegister(reach.Tool{Name: "kb__search", Access: reach.Read,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }})
	}
	// calls makes up to n calls in ctx, each of other arguments, and
	// returns how many ran.
	calls := func(rt *reach.Runtime, ctx context.Context, who string, n int) int {
		ran := 0
		for i := range n {
			res := rt.Call(ctx, &reach.Call{ID: fmt.Sprint(who, i), Tool: "kb__search", Arguments: json.RawMessage(fmt.Sprintf(`{"q":"%s %d"}`, who, i))})
			if res.IsError() {
				if res.Error.Type != reach.TypeBudget {
					t.Fatalf("call %s %d: %+v; want it run or refused by a budget", who, i, res.Error)
				}
				continue
			}
			ran++
		}
		return ran
	}
	pctx, _, err := rts[0].Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice", Budget: &reach.Budget{ToolCalls: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if n := calls(rts[0], pctx, "p", 4); n != 4 {
		t.Fatalf("p ran %d calls on a; want 4", n)
	}
	c1, _, err := rts[0].Delegate(pctx, &reach.Delegation{Agent: "one", Task: "t1", ID: "c1", Fraction: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if n := calls(rts[0], c1, "c1", 5); n != 3 {
		t.Fatalf("c1 ran %d calls on a; want 3 (half of the 6 p had left)", n)
	}
	// a is killed here: b joins p, and knows nothing of what it spent.
	pctx, _, err = rts[1].Begin(ctx, &reach.RequestOptions{ID: "p", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	c2, sub, err := rts[1].Delegate(pctx, &reach.Delegation{Agent: "two", Task: "t2", ID: "c2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("c2 carved on b with %d tool calls", sub.Budget().ToolCalls)
	if n := calls(rts[1], c2, "c2", 10); n != 3 {
		t.Errorf("c2, carved on b with a budget of %d calls, ran %d; want 3, what p had left of its 10", sub.Budget().ToolCalls, n)
	}
	if sp, err := sts[1].Spent(ctx, "p"); err != nil || sp.ToolCalls != 10 {
		t.Errorf("p has spent %+v (%v); want its 10 tool calls, its children's with its own", sp, err)
	}
}
