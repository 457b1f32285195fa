package reach_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/redact"
)

// endSeen keeps the state each request had when its end was told to the
// observers (the state its end records).
type endSeen struct {
	mu    sync.Mutex
	state map[string]reach.RequestState
}

func (o *endSeen) Record(context.Context, *reach.Event)         {}
func (o *endSeen) RequestBegan(context.Context, *reach.Request) {}
func (o *endSeen) RequestEnded(_ context.Context, r *reach.Request) {
	o.mu.Lock()
	o.state[r.ID()] = r.State()
	o.mu.Unlock()
}

func (o *endSeen) of(id string) reach.RequestState {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.state[id]
}

// heldRedactor holds the redaction of a stop's reason "hold" until let
// go: a Stop that has looked at its request (or not yet) waits there.
type heldRedactor struct {
	reach.Redactor
	at, letGo chan struct{}
}

func (h *heldRedactor) RedactString(s string) string {
	if s == "hold" {
		h.at <- struct{}{}
		<-h.letGo
	}
	return h.Redactor.RedactString(s)
}

// bookingRuntime is a runtime whose tool book registers the undo unbook,
// which counts its runs in undone.
func bookingRuntime(t *testing.T, o *reach.Options) (*reach.Runtime, *atomic.Int32) {
	t.Helper()
	rt := reach.New(o)
	var undone atomic.Int32
	rt.MustRegister(
		reach.Tool{Name: "book", Access: reach.Write, Reentrancy: reach.Reentrant,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`"ok"`), nil },
			Undo: &reach.Followup{Tool: "unbook", Args: `{}`}},
		reach.Tool{Name: "unbook", Access: reach.Write, Reentrancy: reach.Reentrant,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				undone.Add(1)
				return json.RawMessage(`"ok"`), nil
			}},
	)
	return rt, &undone
}

// TestStopRacingEndUndoesOnlyWhatItWon: a Stop that looked at its request
// while it ran, and marks it stopped only after End landed, does nothing:
// the request's end was recorded completed, and it stays completed, its
// undo not run. Before, the Stop marked it stopped_cancel after its end
// was recorded completed, and ran the undo of a request that had
// completed. (The stop's reason is redacted between its look and its
// mark before the change: a redactor that waits there holds the Stop in
// that gap.)
func TestStopRacingEndUndoesOnlyWhatItWon(t *testing.T) {
	seen := &endSeen{state: map[string]reach.RequestState{}}
	plain, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &heldRedactor{Redactor: plain, at: make(chan struct{}), letGo: make(chan struct{})}
	rt, undone := bookingRuntime(t, &reach.Options{Recorder: seen, Redactor: h})
	ctx, req := begin(t, rt, nil)
	if res := rt.Call(ctx, &reach.Call{ID: "b1", Tool: "book", Arguments: json.RawMessage(`{}`)}); res.Status != reach.StatusSuccess {
		t.Fatalf("book: %s %+v", res.Status, res.Error)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		req.Stop(reach.Cancel, "operator", "hold")
	}()
	<-h.at // the Stop is under way
	req.End()
	close(h.letGo)
	<-stopped
	if s := seen.of(req.ID()); s != reach.RequestCompleted {
		t.Fatalf("end recorded %q; want completed (the Stop had not marked it yet)", s)
	}
	if s := req.State(); s != reach.RequestCompleted || req.StopCause() != nil {
		t.Fatalf("after the Stop that lost to End: %s, cause %+v; want completed, none", s, req.StopCause())
	}
	// Nothing is undone: a stop that won would have started its undo
	// before Stop returned (no stop above holds its record here), and the
	// undo, once started, is no longer held.
	if req.Undos() != 1 {
		t.Fatalf("undos held: %d; want the booking's 1, not run", req.Undos())
	}
	if n := undone.Load(); n != 0 {
		t.Fatalf("undos run: %d; want 0", n)
	}
}

// TestStopAndEndAtOnceManyRounds: Stop and End of a request that booked
// something, at once, many times (run it under -race): whichever wins,
// the request's end is recorded in the state it keeps (stopped, once its
// undo ran), and its undo runs exactly when it ended stopped, once.
func TestStopAndEndAtOnceManyRounds(t *testing.T) {
	seen := &endSeen{state: map[string]reach.RequestState{}}
	rt, undone := bookingRuntime(t, &reach.Options{Recorder: seen})
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	var wantUndone int32
	var completed []*reach.Request
	for i := range rounds {
		ctx, req := begin(t, rt, nil)
		if res := rt.Call(ctx, &reach.Call{ID: "b", Tool: "book", Arguments: json.RawMessage(`{}`)}); res.Status != reach.StatusSuccess {
			t.Fatalf("round %d: book: %s %+v", i, res.Status, res.Error)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() { <-start; req.Stop(reach.Cancel, "operator", "race") })
		wg.Go(func() { <-start; req.End() })
		close(start)
		wg.Wait()
		// A stopped request's end is recorded once its undo ran (the
		// stop's compensation, on a goroutine of its own): wait for it.
		final, atEnd := req.State(), seen.of(req.ID())
		for deadline := time.Now().Add(30 * time.Second); atEnd == "" && time.Now().Before(deadline); atEnd = seen.of(req.ID()) {
			time.Sleep(time.Millisecond)
		}
		if final != atEnd {
			t.Fatalf("round %d: end recorded %q, the request is %q", i, atEnd, final)
		}
		switch {
		case final == reach.RequestCompleted:
			completed = append(completed, req)
		case strings.HasPrefix(string(final), "stopped_"):
			wantUndone++
		default:
			t.Fatalf("round %d: state %q", i, final)
		}
	}
	// Each undo the stops won runs (in the background, once the stop is
	// recorded): wait for them all, then for the runtime to hold no
	// undo of any request, so that one too many would have shown.
	for deadline := time.Now().Add(30 * time.Second); undone.Load() < wantUndone && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := undone.Load(); n != wantUndone {
		t.Fatalf("undos run: %d; want %d (one per request the stop won)", n, wantUndone)
	}
	for _, r := range completed {
		if r.State() != reach.RequestCompleted || r.Undos() != 1 {
			t.Fatalf("completed request %s is %s, holds %d undos; want its booking's 1, never run", r.ID(), r.State(), r.Undos())
		}
	}
}
