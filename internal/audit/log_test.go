package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// stores are the backends every Log test runs against.
var stores = []struct {
	name string
	open func(t *testing.T) store.AuditLog
}{
	{"memory", func(t *testing.T) store.AuditLog { return store.NewMemory() }},
	{"sqlite", func(t *testing.T) store.AuditLog {
		st, err := sqlite.Open(context.Background(), t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

func eachStore(t *testing.T, f func(t *testing.T, st store.AuditLog)) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) { f(t, s.open(t)) })
	}
}

func newLog(t *testing.T, st store.AuditLog, o *audit.Options) *audit.Log {
	t.Helper()
	l, err := audit.New(context.Background(), st, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestAppendConcurrentAndVerify(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.AuditLog) {
		ctx := t.Context()
		l := newLog(t, st, &audit.Options{CheckpointEvery: 100})
		var mu sync.Mutex
		var seqs []int64
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 125 {
					seq, err := l.Append(ctx, testEvent(w*1000+i))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seqs = append(seqs, seq)
					mu.Unlock()
				}
			})
		}
		for i := range 500 {
			l.Record(ctx, &reach.Event{Time: time.Now(), Request: "rec", Frame: reach.FrameID(i + 1), Kind: reach.ToolFrame,
				Name: "t", State: reach.Completed})
		}
		wg.Wait()
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		slices.Sort(seqs)
		if len(seqs) != 1000 || seqs[0] < 1 || seqs[len(seqs)-1] > 1500 || slices.Compact(seqs) != nil && len(slices.Compact(seqs)) != 1000 {
			t.Fatalf("Append returned %d seqs from %d to %d, want 1000 distinct ones in 1..1500", len(seqs), seqs[0], seqs[len(seqs)-1])
		}
		s := l.Stats()
		if s.Appended != 1500 || s.Dropped != 0 || s.Failed != 0 || s.Batches < 1 {
			t.Errorf("Stats = %+v, want 1500 appended, none dropped or failed", s)
		}
		rep, err := l.Verify(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Events != 1500 || rep.Checkpoints != 15 {
			t.Errorf("Verify = %+v, want 1500 events and 15 checkpoints", rep)
		}
		// A new Log continues the chain.
		l.Close()
		l2 := newLog(t, st, nil)
		if seq, err := l2.Append(ctx, testEvent(0)); err != nil || seq != 1501 {
			t.Fatalf("Append after reopening = %d, %v; want 1501", seq, err)
		}
		if _, err := l2.Verify(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestShow(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.AuditLog) {
		ctx := t.Context()
		l := newLog(t, st, nil)
		var want []*audit.Event
		for i := range 9 {
			e := testEvent(i)
			e.Tokens, e.Budget = int64(i), json.RawMessage(`{"turns":3}`)
			e.Message = "line1\nline2 \"q\" \\ \x01\t é 😀 <b>&amp; \u2028"
			e.Args = json.RawMessage(`{"q":"<tag> & \"x\"","n":[1,2.5e3,-0,true,null],"u":"\u00e9\ud83d\ude00"}`)
			seq, err := l.Append(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			if e.Request == "req_1" {
				c := *e
				c.Seq = seq
				want = append(want, &c)
			}
		}
		got, err := l.Show(ctx, "req_1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(audit.Event{}, "PrevHash", "Hash")); diff != "" {
			t.Errorf("Show (-want +got):\n%s", diff)
		}
		for i, e := range got {
			if len(e.Hash) != audit.HashSize || (i > 0 && e.Seq <= got[i-1].Seq) {
				t.Errorf("event %d: seq %d, hash %x", i, e.Seq, e.Hash)
			}
		}
	})
}

// blockingStore holds every AppendAudit until released.
type blockingStore struct {
	store.AuditLog
	release chan struct{}
	fail    error
}

func (b *blockingStore) AppendAudit(ctx context.Context, recs []*store.AuditRecord, cps []store.AuditCheckpoint) error {
	<-b.release
	if b.fail != nil {
		return b.fail
	}
	return b.AuditLog.AppendAudit(ctx, recs, cps)
}

// Record never waits: with the writer stuck and the queue full, it drops
// and counts.
func TestRecordNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		bs := &blockingStore{AuditLog: store.NewMemory(), release: make(chan struct{})}
		// No linger: the writer takes the first event straight into its
		// commit and is stuck there. (With a linger it would wait for more,
		// and the Records below would race it for the queue.)
		l, err := audit.New(ctx, bs, &audit.Options{QueueSize: 4, Linger: -1})
		if err != nil {
			t.Fatal(err)
		}
		e := &reach.Event{Time: time.Now(), Request: "r", Name: "t"}
		l.Record(ctx, e)
		synctest.Wait() // the writer took it and is stuck in AppendAudit
		for range 99 {
			l.Record(ctx, e)
		}
		if got := l.Dropped(); got != 95 {
			t.Errorf("Dropped = %d, want 95 (1 in the writer, 4 queued)", got)
		}
		close(bs.release)
		l.Close()
		// The 5 events, and the note that says 95 were lost before them.
		if s := l.Stats(); s.Appended != 6 {
			t.Errorf("Appended = %d, want 6", s.Appended)
		}
		l.Record(ctx, e)
		if _, err := l.Append(ctx, testEvent(1)); !errors.Is(err, audit.ErrClosed) {
			t.Errorf("Append after Close = %v, want ErrClosed", err)
		}
		if got := l.Dropped(); got != 96 {
			t.Errorf("Dropped after a Record on a closed log = %d, want 96", got)
		}
	})
}

// Recorded events linger for Options.Linger so that one commit carries
// those of several calls; anything that waits for a commit (Flush, Append,
// Close) ends the linger at once.
func TestRecordLingers(t *testing.T) {
	const linger = time.Hour // the bubble's clock: no test waits for it
	ev := func(i int) *reach.Event {
		return &reach.Event{Time: time.Now(), Request: "r", Frame: reach.FrameID(i), Kind: reach.ToolFrame, Name: "t", State: reach.Completed}
	}
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		mem := store.NewMemory()
		l := newLog(t, mem, &audit.Options{Linger: linger})
		start := time.Now()
		l.Record(ctx, ev(1))
		synctest.Wait() // the writer took it and lingers
		l.Record(ctx, ev(2))
		synctest.Wait()
		if s := l.Stats(); s.Appended != 0 {
			t.Fatalf("Appended = %d before the linger ended, want 0", s.Appended)
		}
		time.Sleep(linger)
		synctest.Wait()
		if s := l.Stats(); s.Appended != 2 || s.Batches != 1 {
			t.Fatalf("after the linger: Appended = %d, Batches = %d; want 2 in 1", s.Appended, s.Batches)
		}

		start = time.Now()
		l.Record(ctx, ev(3))
		synctest.Wait()
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if s := l.Stats(); s.Appended != 3 || s.Batches != 2 || time.Since(start) != 0 {
			t.Errorf("Flush: Appended = %d, Batches = %d after %v; want 3 in 2, at once", s.Appended, s.Batches, time.Since(start))
		}
		l.Record(ctx, ev(4))
		synctest.Wait()
		if _, err := l.Append(ctx, testEvent(5)); err != nil {
			t.Fatal(err)
		}
		if s := l.Stats(); s.Appended != 5 || s.Batches != 3 || time.Since(start) != 0 {
			t.Errorf("Append: Appended = %d, Batches = %d after %v; want 5 in 3, at once", s.Appended, s.Batches, time.Since(start))
		}
		l.Record(ctx, ev(6))
		synctest.Wait()
		l.Close()
		if s := l.Stats(); s.Appended != 6 || time.Since(start) != 0 {
			t.Errorf("Close: Appended = %d after %v; want 6, at once", s.Appended, time.Since(start))
		}
		if _, err := audit.Verify(ctx, mem); err != nil {
			t.Error(err)
		}
	})
}

// A queue half full ends the linger: Record drops nothing it would not
// drop without one.
func TestLingerEndsWhenTheQueueFills(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		l := newLog(t, store.NewMemory(), &audit.Options{QueueSize: 4, Linger: time.Hour})
		start := time.Now()
		e := &reach.Event{Time: time.Now(), Request: "r", Name: "t"}
		l.Record(ctx, e)
		synctest.Wait() // the writer took it and lingers
		l.Record(ctx, e)
		l.Record(ctx, e) // two of four queued: the linger ends
		synctest.Wait()
		if s := l.Stats(); s.Appended != 3 || s.Dropped != 0 || time.Since(start) != 0 {
			t.Errorf("Appended = %d, Dropped = %d after %v; want 3 and 0, at once", s.Appended, s.Dropped, time.Since(start))
		}
	})
}

// A failed commit fails its Appends and counts its Records; the chain
// goes on from the last committed event, with a note of the lost Record.
func TestCommitFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		mem := store.NewMemory()
		bs := &blockingStore{AuditLog: mem, release: make(chan struct{}), fail: errors.New("disk full")}
		// No linger: the Record's batch commits (and fails) alone.
		l, err := audit.New(ctx, bs, &audit.Options{Linger: -1})
		if err != nil {
			t.Fatal(err)
		}
		l.Record(ctx, &reach.Event{Request: "r"})
		synctest.Wait() // the writer is stuck with a batch of the Record
		errc := make(chan error)
		go func() { _, err := l.Append(ctx, testEvent(0)); errc <- err }()
		synctest.Wait()
		bs.release <- struct{}{} // the Record's batch fails
		synctest.Wait()          // the writer is stuck with a batch of the Append
		bs.release <- struct{}{} // which fails too
		if err := <-errc; err == nil || !errors.Is(err, bs.fail) {
			t.Fatalf("Append = %v, want the store's error", err)
		}
		bs.fail = nil
		close(bs.release)
		if s := l.Stats(); s.Failed != 1 {
			t.Errorf("Failed = %d, want 1 (the Record in the failed batch)", s.Failed)
		}
		// Seq 1 is the note of the Record lost, before the Append.
		if seq, err := l.Append(ctx, testEvent(1)); err != nil || seq != 2 {
			t.Errorf("Append after a failure = %d, %v; want seq 2", seq, err)
		}
		l.Close()
		if rep, err := audit.Verify(ctx, mem); err != nil {
			t.Error(err)
		} else if rep.Lost != 1 || rep.LossNotes != 1 {
			t.Errorf("Verify: %d lost in %d notes, want 1 in 1", rep.Lost, rep.LossNotes)
		}
	})
}

// Two logs appending to one store (two gateways on one database) keep one
// chain: a writer that lost the race for a seq rechains after the winner.
func TestTwoWriters(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.AuditLog) {
		ctx := t.Context()
		a, b := newLog(t, st, nil), newLog(t, st, nil)
		var wg sync.WaitGroup
		for _, l := range []*audit.Log{a, b} {
			for w := range 4 {
				wg.Go(func() {
					for i := range 50 {
						if _, err := l.Append(ctx, testEvent(w*100+i)); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
		}
		wg.Wait()
		rep, err := audit.Verify(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Events != 400 {
			t.Errorf("%d events, want 400", rep.Events)
		}
	})
}

func TestFromReach(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	tests := []struct {
		in   *reach.Event
		want *audit.Event
	}{{
		in: &reach.Event{Time: at, Request: "r1", Root: "r1", Principal: "alice", Frame: 0xab, Parent: 0xaa, Kind: reach.ToolFrame,
			Name: "search", CallID: "c7", Why: "find the policy", Agent: "main", Args: []byte(`{"q":1}`), State: reach.Refused,
			Summary: "s", Tokens: 3, Latency: time.Second, Remaining: reach.Budget{Turns: 2},
			Error: &reach.Error{Guard: "graph", Type: reach.TypeCycle, Code: "cycle", Message: "already on the stack"}},
		want: &audit.Event{Time: at, Request: "r1", Principal: "alice", Frame: "00000000000000ab", Parent: "00000000000000aa",
			Kind: "tool", Name: "search", CallID: "c7", Why: "find the policy", Agent: "main", Args: []byte(`{"q":1}`),
			Decision: "refused", Result: "s", Tokens: 3, Latency: time.Second, Budget: []byte(`{"turns":2}`),
			Guard: "graph", Reason: "cycle", Code: "cycle", Message: "already on the stack"},
	}, {
		in: &reach.Event{Time: at, Request: "r1.sub", Root: "r1", Kind: reach.ToolFrame, Name: "get", State: reach.Completed,
			Summary: "1 hit", Result: []byte(`{"hits":[1]}`)},
		want: &audit.Event{Time: at, Request: "r1.sub", Root: "r1", Kind: "tool", Name: "get", Decision: "completed",
			Result: `{"hits":[1]}`},
	}, {
		in: &reach.Event{Time: at, Request: "r2", Agent: "main", State: reach.Cancelled,
			Stop: &reach.Cause{Mode: reach.Cancel, By: "operator", Reason: "runaway"}},
		want: &audit.Event{Time: at, Request: "r2", Agent: "main", Kind: "stop", Name: "cancel", Decision: "cancelled",
			Guard: "operator", Message: "runaway"},
	}, {
		in: &reach.Event{Time: at, Request: "r3", Root: "r3", Principal: "bob", Name: "upstream:kb",
			Breaker: &reach.BreakerChange{Kind: "upstream", Name: "kb", From: reach.BreakerClosed, To: reach.BreakerOpen,
				Reason: "5 transient failures in a row", At: at, RetryAt: at.Add(10 * time.Second)}},
		want: &audit.Event{Time: at, Request: "r3", Principal: "bob", Kind: "breaker", Name: "upstream:kb", Decision: "open",
			Guard: "breaker", Code: "breaker_open", Message: "from closed: 5 transient failures in a row; a probe may go at 2023-11-14T22:13:30Z"},
	}}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, audit.FromReach(tt.in)); diff != "" {
			t.Errorf("FromReach (-want +got):\n%s", diff)
		}
	}
}

// A call's event with no budget set is built without encoding one: the
// event and its frame's id are its only allocations.
func TestFromReachAllocations(t *testing.T) {
	e := &reach.Event{Time: time.Unix(1_700_000_000, 0), Request: "r1", Root: "r1", Frame: 0xab, Kind: reach.ToolFrame,
		Name: "get", State: reach.Completed, Summary: "1 hit"}
	if n := testing.AllocsPerRun(100, func() { audit.FromReach(e) }); n > 2 {
		t.Errorf("FromReach: %v allocations, want 2", n)
	}
}

// TestBreakerChangesAreAudited: a circuit breaker's changes of state are
// events of the audit log, in the request of the call that moved it, and
// the chain verifies.
func TestBreakerChangesAreAudited(t *testing.T) {
	ctx := t.Context()
	l := newLog(t, store.NewMemory(), nil)
	rt := reach.New(&reach.Options{Recorder: l})
	rt.MustRegister(reach.Tool{Name: "lookup", Upstream: "kb", Retry: &reach.RetryPolicy{Attempts: 1}, Breaker: &reach.BreakerPolicy{Failures: 2},
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			return nil, &reach.ToolError{Type: "unavailable", Message: "upstream kb is not reachable"}
		}})
	rctx, req, err := rt.Begin(ctx, &reach.RequestOptions{ID: "req_brk", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		rt.Call(rctx, &reach.Call{ID: fmt.Sprint(i), Tool: "lookup", Arguments: json.RawMessage(fmt.Sprintf(`{"id":%d}`, i))})
	}
	req.End()
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := l.Show(ctx, "req_brk")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s %s %s %s", e.Kind, e.Name, e.Decision, e.Code))
	}
	want := []string{"tool lookup failed unavailable", "breaker tool:lookup open breaker_open", "tool lookup failed unavailable",
		"tool lookup failed breaker_open"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded events (-want +got):\n%s", diff)
	}
	if _, err := l.Verify(ctx); err != nil {
		t.Error(err)
	}
}

// With the runtime: every frame that ends is recorded, refusals with their guard.
func TestRecorderWithRuntime(t *testing.T) {
	ctx := t.Context()
	st := store.NewMemory()
	l := newLog(t, st, nil)
	rt := reach.New(&reach.Options{Recorder: l})
	rt.MustRegister(reach.Tool{Name: "lookup", Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"found":true}`), nil
	}})
	rctx, req, err := rt.Begin(ctx, &reach.RequestOptions{ID: "req_rt", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	mctx, turn, err := rt.BeginModel(rctx, "gpt-test")
	if err != nil {
		t.Fatal(err)
	}
	rt.Call(mctx, &reach.Call{ID: "c1", Tool: "lookup", Arguments: json.RawMessage(`{"id":1,"api_key":"k-123456"}`)})
	rt.Call(mctx, &reach.Call{ID: "c2", Tool: "nope", Arguments: json.RawMessage(`{}`)})
	turn.EndModel(reach.TokenUsage{Input: 10, Output: 5})
	req.End()
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := l.Show(ctx, "req_rt")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s %s %s %s", e.Kind, e.Name, e.Decision, e.Guard))
		if e.Name == "lookup" && string(e.Args) != `{"api_key":"[REDACTED]","id":1}` && string(e.Args) != `{"id":1,"api_key":"[REDACTED]"}` {
			t.Errorf("stored args %s", e.Args)
		}
	}
	want := []string{"tool lookup completed ", "tool nope refused resolve", "model gpt-test completed "}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded events (-want +got):\n%s", diff)
	}
	if _, err := l.Verify(ctx); err != nil {
		t.Error(err)
	}
}

// TestStopNamesInstance: several instances on one store each record the
// stop they apply; each names its instance (Options.Instance), so the two
// are not the same event twice. Other events are encoded as before, and a
// log written before (no instance) verifies with one written after.
func TestStopNamesInstance(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.AuditLog) {
		ctx := context.Background()
		old := newLog(t, st, nil)
		stop := func() *reach.Event {
			return &reach.Event{Time: time.Now(), Request: "r1", State: reach.Cancelled,
				Stop: &reach.Cause{Mode: reach.Cancel, By: "operator", Reason: "runaway"}}
		}
		old.Record(ctx, stop())
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a", "b"} {
			l := newLog(t, st, &audit.Options{Instance: name})
			l.Record(ctx, stop())
			l.Record(ctx, &reach.Event{Time: time.Now(), Request: "r1", Frame: 1, Kind: reach.ToolFrame, Name: "get", State: reach.Completed})
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		}
		evs, err := audit.Show(ctx, st, "r1")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs {
			data, _ := e.MarshalJSON()
			if e.Kind != "stop" && (e.Instance != "" || strings.Contains(string(data), "instance")) {
				t.Errorf("a %s event names an instance: %s", e.Kind, data)
			}
			if e.Kind == "stop" {
				got = append(got, e.Instance)
			}
		}
		if want := []string{"", "a", "b"}; !slices.Equal(got, want) {
			t.Errorf("the stops name the instances %q, want %q", got, want)
		}
		if _, err := audit.Verify(ctx, st); err != nil {
			t.Errorf("a log with stops before and after naming instances does not verify: %v", err)
		}
	})
}

// TestToolEventNamesUpstream: each tool call's event names the upstream
// it was dispatched to (Options.Upstreams; audit replay places the tool by it);
// other events, and tools of no upstream, are encoded as before, and a log
// written before (no upstream) verifies with one written after.
func TestToolEventNamesUpstream(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.AuditLog) {
		ctx := context.Background()
		ups := map[string]string{"kb__search": "docs"}
		tool := func(name string) *reach.Event {
			return &reach.Event{Time: time.Now(), Request: "r1", Frame: 1, Kind: reach.ToolFrame, Name: name, State: reach.Completed, Upstream: ups[name]}
		}
		old := newLog(t, st, nil)
		old.Record(ctx, tool("kb__search"))
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}
		l := newLog(t, st, &audit.Options{Upstreams: true})
		l.Record(ctx, tool("kb__search"))
		l.Record(ctx, tool("builtin"))
		l.Record(ctx, &reach.Event{Time: time.Now(), Request: "r1", Frame: 2, Kind: reach.ModelFrame, Name: "kb__search", State: reach.Completed})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		evs, err := audit.Show(ctx, st, "r1")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs {
			data, _ := e.MarshalJSON()
			if e.Upstream == "" && strings.Contains(string(data), "upstream") {
				t.Errorf("an event of no upstream encodes one: %s", data)
			}
			got = append(got, e.Kind+" "+e.Name+" "+e.Upstream)
		}
		if want := []string{"tool kb__search ", "tool kb__search docs", "tool builtin ", "model kb__search "}; !slices.Equal(got, want) {
			t.Errorf("the events' upstreams: %q, want %q", got, want)
		}
		if _, err := audit.Verify(ctx, st); err != nil {
			t.Errorf("a log with tool events before and after naming upstreams does not verify: %v", err)
		}
	})
}

// TestToolEventUpstreamAsDispatched: a tool call's event names the
// upstream its call was dispatched to, though a reload placed the tool on
// another upstream before the event was written (here: while the call
// ran). The writer looked the tool up by name as it wrote the event, and
// recorded the new placement.
func TestToolEventUpstreamAsDispatched(t *testing.T) {
	ctx := t.Context()
	st := store.NewMemory()
	l := newLog(t, st, &audit.Options{Upstreams: true})
	rt := reach.New(&reach.Options{Recorder: l})
	moved := reach.Tool{Name: "kb__search", Access: reach.Read, Upstream: "wiki",
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"hits":0}`), nil
		}}
	rt.MustRegister(reach.Tool{Name: "kb__search", Access: reach.Read, Upstream: "docs",
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			if err := rt.Replace(moved); err != nil { // the reload, as the call runs
				return nil, err
			}
			return json.RawMessage(`{"hits":1}`), nil
		}})
	rctx, req, err := rt.Begin(ctx, &reach.RequestOptions{ID: "req_moved", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"c1", "c2"} {
		if res := rt.Call(rctx, &reach.Call{ID: id, Tool: "kb__search", Arguments: json.RawMessage(`{}`)}); res.Status != reach.StatusSuccess {
			t.Fatalf("call %s: %+v", id, res)
		}
	}
	req.End()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := audit.Show(ctx, st, "req_moved")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		if e.Kind == "tool" {
			got = append(got, e.CallID+" "+e.Upstream)
		}
	}
	if want := []string{"c1 docs", "c2 wiki"}; !slices.Equal(got, want) {
		t.Errorf("the tool events' upstreams: %q, want %q (the first call was dispatched to docs)", got, want)
	}
}

// TestEventAppendJSON: AppendJSON appends to what dst holds the bytes
// MarshalJSON returns, which the chain hashes.
func TestEventAppendJSON(t *testing.T) {
	e := &audit.Event{Root: "r1", Kind: "tool", Name: "pay", Args: json.RawMessage(`{"amount":3}`), Tenant: "acme", Tokens: 7}
	m, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if got := e.AppendJSON([]byte("x")); string(got) != "x"+string(m) || !json.Valid(got[1:]) {
		t.Errorf("AppendJSON = %s, want x%s", got, m)
	}
}
