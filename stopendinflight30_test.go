package reach_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// inFlightTools registers "book" (a write whose undo is "unbook") and
// "unbook", which st is told of. A booking of ref "w" tells entered and
// then waits for release, ignoring its context (a tool that does not stop
// when cancelled); an undo of ref "u" does the same with undoEntered and
// undoRelease. Both tools take timeout and one attempt.
func inFlightTools(rt *reach.Runtime, st *heldStops, timeout time.Duration, entered, undoEntered chan<- string, release, undoRelease <-chan struct{}) {
	once := &reach.RetryPolicy{Attempts: 1}
	rt.MustRegister(
		reach.Tool{Name: "book", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true, Timeout: timeout, Retry: once,
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				var in struct{ Ref string }
				json.Unmarshal(a, &in)
				if strings.HasPrefix(in.Ref, "w") {
					entered <- in.Ref
					<-release
				}
				st.note("book " + in.Ref)
				return a, nil
			},
			Undo: &reach.Followup{Tool: "unbook", Args: `{"ref": "{args.ref}"}`}},
		reach.Tool{Name: "unbook", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true, Timeout: timeout, Retry: once,
			Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
				var in struct{ Ref string }
				json.Unmarshal(a, &in)
				if in.Ref == "u" {
					undoEntered <- in.Ref
					<-undoRelease
				}
				st.note("undo " + in.Ref)
				return json.RawMessage(`"ok"`), nil
			}})
}

// ended reports whether got holds an end of request id.
func ended(got []string, id string) bool {
	return slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "end "+id+" ") })
}

// TestStoppedEndWaitsForAWriteInFlight: a write of request r is running
// when r is stopped (its tool does not stop when cancelled) and r is ended
// at once (a client's end, an A2A hand-off's). The write completes after:
// its undo runs, and r's end is recorded once, after that undo. Before,
// r's end was recorded at once (nothing was owed yet), so a kill after the
// write's end and before its compensation's request began left r stopped
// and ended, which no recovery finds: the write stayed done
// (TestWriteInFlightUndoneAfterAKill in internal/durable).
func TestStoppedEndWaitsForAWriteInFlight(t *testing.T) {
	st := &heldStops{}
	entered, release := make(chan string, 1), make(chan struct{})
	rt := reach.New(&reach.Options{Requests: st})
	inFlightTools(rt, st, 0, entered, nil, release, nil)
	ctx, r, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *reach.Result, 1)
	go func() {
		done <- rt.Call(ctx, &reach.Call{ID: "w", Tool: "book", Arguments: json.RawMessage(`{"ref":"w"}`)})
	}()
	<-entered
	r.Stop(reach.Cancel, "operator", "enough")
	r.End()
	if got := st.records(); ended(got, "r") {
		t.Errorf("recorded %v while r's write ran; want r's end after the write and its undo", got)
	}
	close(release)
	res := <-done
	if res.IsError() || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "unbook") }) {
		t.Errorf("the write in flight: %s %v; want it completed, and undone (a note naming unbook)", res.ModelText(), res.Notes)
	}
	got := waitRecorded(t, st, "end r stopped_cancel")
	if count(got, "end r stopped_cancel") != 1 || slices.Index(got, "end r stopped_cancel") < slices.Index(got, "undo w") || count(got, "undo w") != 1 {
		t.Errorf("recorded %v; want the write undone once, then r's end once", got)
	}
}

// TestStoppedEndAfterAWriteThatNeverAnswers: a write of stopped request r
// whose tool ignores its cancellation holds r's end for the tool's time
// only (its timeout, attempts and backoffs): then r's end is recorded,
// once. When the write completes after all, it is undone live, and no
// second end is recorded.
func TestStoppedEndAfterAWriteThatNeverAnswers(t *testing.T) {
	st := &heldStops{}
	entered, release := make(chan string, 1), make(chan struct{})
	rt := reach.New(&reach.Options{Requests: st})
	inFlightTools(rt, st, 10*time.Millisecond, entered, nil, release, nil)
	ctx, r, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *reach.Result, 1)
	go func() {
		done <- rt.Call(ctx, &reach.Call{ID: "w", Tool: "book", Arguments: json.RawMessage(`{"ref":"w"}`)})
	}()
	<-entered
	r.Stop(reach.Cancel, "operator", "enough")
	r.End()
	got := waitRecorded(t, st, "end r stopped_cancel")
	if count(got, "end r stopped_cancel") != 1 || slices.Contains(got, "book w") {
		t.Errorf("recorded %v; want r's end once, the write still running", got)
	}
	close(release)
	<-done
	got = waitRecorded(t, st, "undo w")
	if count(got, "end r stopped_cancel") != 1 || count(got, "undo w") != 1 {
		t.Errorf("recorded %v; want the late write undone once, and r's end once", got)
	}
}

// TestStoppedEndAfterAnUndoThatIgnoresItsContext: the undo of a stopped
// request's write ignores its cancellation and never answers. It is
// waited for its tool's time only: then it is dead-lettered as "may have
// run", and the request's end is recorded, once. Before, the compensation
// waited for it for good, and with it the request's end: the request
// never ended, its budget never settled.
func TestStoppedEndAfterAnUndoThatIgnoresItsContext(t *testing.T) {
	st := &heldStops{}
	undoEntered, undoRelease := make(chan string, 1), make(chan struct{})
	t.Cleanup(func() { close(undoRelease) })
	rt := reach.New(&reach.Options{Requests: st})
	inFlightTools(rt, st, 10*time.Millisecond, nil, undoEntered, nil, undoRelease)
	ctx, r, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"a", "u"} {
		if res := rt.Call(ctx, &reach.Call{ID: ref, Tool: "book", Arguments: json.RawMessage(`{"ref":"` + ref + `"}`)}); res.IsError() {
			t.Fatal(res.ModelText())
		}
	}
	r.Stop(reach.Cancel, "operator", "enough")
	<-undoEntered
	r.End()
	got := waitRecorded(t, st, "end r stopped_cancel")
	if count(got, "end r stopped_cancel") != 1 || slices.Index(got, "undo a") < 0 || slices.Index(got, "undo a") > slices.Index(got, "end r stopped_cancel") {
		t.Errorf("recorded %v; want the other undo run, then r's end once", got)
	}
	dls, err := rt.DeadLetters(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 || dls[0].Tool != "unbook" || dls[0].Error == nil || !strings.Contains(dls[0].Error.Message, "may have run") {
		t.Errorf("dead letters %+v; want the unbook that did not answer, as may have run", dls)
	}
}

// TestStoppedEndsWithManyWritesInFlight: many writes of one request run
// when it is stopped and ended (from many goroutines at once, with the
// stop): each is undone once after it completes, and the end is recorded
// once, after the last undo. Run with -race: the count of what the end
// waits for is written by each write and read by the end.
func TestStoppedEndsWithManyWritesInFlight(t *testing.T) {
	const n = 16
	st := &heldStops{}
	entered, release := make(chan string, n), make(chan struct{})
	// The loop guard is on: the writes finish after their tree ended and
	// let its detector go, and report to none (TestLateCallDoneAfterRelease).
	rt := reach.New(&reach.Options{Requests: st})
	inFlightTools(rt, st, 0, entered, nil, release, nil)
	ctx, r, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			rt.Call(ctx, &reach.Call{ID: fmt.Sprint("w", i), Tool: "book", Arguments: json.RawMessage(fmt.Sprintf(`{"ref":"w%d"}`, i))})
		})
	}
	for range n {
		<-entered
	}
	var ends sync.WaitGroup
	ends.Go(func() { r.Stop(reach.Cancel, "operator", "enough") })
	ends.Go(r.End)
	ends.Wait()
	if got := st.records(); ended(got, "r") && r.State() == reach.RequestStoppedCancel {
		t.Errorf("recorded %v while r's writes ran; want r's end after them", got)
	}
	close(release)
	wg.Wait()
	end := "end r " + string(r.State())
	got := waitRecorded(t, st, end)
	if count(got, end) != 1 {
		t.Errorf("recorded %v; want r's end once", got)
	}
	undos := slices.DeleteFunc(slices.Clone(got), func(s string) bool { return !strings.HasPrefix(s, "undo w") })
	if r.State() == reach.RequestStoppedCancel && (len(undos) != n || len(slices.Compact(slices.Sorted(slices.Values(undos)))) != n ||
		slices.ContainsFunc(got[slices.Index(got, end):], func(s string) bool { return strings.HasPrefix(s, "undo w") })) {
		t.Errorf("recorded %v; want each of the %d writes undone once, then r's end", got, n)
	}
}
