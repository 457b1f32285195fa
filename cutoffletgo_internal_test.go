package reach

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// failingTake is a memCutOffStore whose TakeCutOff fails, noting whether
// its context had a deadline.
type failingTake struct {
	*memCutOffStore
	mu       sync.Mutex
	takes    int
	deadline bool
}

func (s *failingTake) TakeCutOff(ctx context.Context, key, request, call string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.takes++
	_, s.deadline = ctx.Deadline()
	return false, errors.New("the store is unreachable")
}

// A write whose caller went away while its tool ran, on a shared store,
// and whose tool then answered: the early note is let go with a bounded
// call (a store that hangs holds no goroutine for ever), and a take that
// fails is logged, by tool, request and call, never the arguments: the
// note left answers the next identical write interrupted (docs/STATE.md).
// Before, the take had no deadline and its error was dropped.
func TestCutOffLetGoBoundedAndLogged(t *testing.T) {
	st := &failingTake{memCutOffStore: new(memCutOffStore)}
	var logs bytes.Buffer
	co := &cutOffs{store: st, shared: true, log: slog.New(slog.NewTextHandler(&logs, nil))}
	id := cutOffID{scope: "owner\x00", tool: "add_item", args: "digest-of-secret-args"}
	ctx, leave := context.WithCancel(context.Background())
	co.start(id, ctx, "r", time.Now(), "r", "c1")
	if co.dispatch(id, ctx, "r", "c1") != nil {
		t.Fatal("the write was not started")
	}
	leave()
	for deadline := time.Now().Add(10 * time.Second); st.len() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if st.len() != 1 {
		t.Fatal("the early note of the write whose caller went away was not stored")
	}
	co.end(ctx, id, "r", "c1", false) // its tool answered after all
	st.mu.Lock()
	takes, bounded := st.takes, st.deadline
	st.mu.Unlock()
	if takes != 1 || !bounded {
		t.Errorf("the note let go by %d takes, with a deadline: %v; want one, bounded", takes, bounded)
	}
	got := logs.String()
	for _, want := range []string{"level=WARN", "tool=add_item", "request=r", "call=c1", "the store is unreachable", "answered interrupted"} {
		if !strings.Contains(got, want) {
			t.Errorf("the log %q does not say %q", got, want)
		}
	}
	if strings.Contains(got, "digest-of-secret-args") {
		t.Errorf("the log names the arguments: %q", got)
	}
}

// A retry told of a write cut off, on a store this process alone uses,
// takes the write from the store too (untake) with a bounded call, and a
// take that fails is logged: the write left there is told again after a
// restart. Before, the take had no deadline (a store that hung held the
// retry's call) and its error was dropped.
func TestCutOffUntakeBoundedAndLogged(t *testing.T) {
	st := &failingTake{memCutOffStore: new(memCutOffStore)}
	var logs bytes.Buffer
	co := &cutOffs{store: st, log: slog.New(slog.NewTextHandler(&logs, nil))}
	id := cutOffID{scope: "owner\x00", tool: "add_item", args: "digest-of-secret-args"}
	began := time.Now()
	co.note(id.key(), cutOffWrite{owner: id.scope, tool: id.tool, root: "r", began: began, request: "r", call: "c1", at: time.Now()})
	w, ok := co.take(t.Context(), id, "r", began)
	if !ok || w.call != "c1" {
		t.Fatalf("the retry was not told of the write cut off: %+v %v", w, ok)
	}
	st.mu.Lock()
	takes, bounded := st.takes, st.deadline
	st.mu.Unlock()
	if takes != 1 || !bounded {
		t.Errorf("the write taken from the store by %d takes, with a deadline: %v; want one, bounded", takes, bounded)
	}
	got := logs.String()
	for _, want := range []string{"level=WARN", "tool=add_item", "request=r", "call=c1", "the store is unreachable", "after a restart"} {
		if !strings.Contains(got, want) {
			t.Errorf("the log %q does not say %q", got, want)
		}
	}
	if strings.Contains(got, "digest-of-secret-args") {
		t.Errorf("the log names the arguments: %q", got)
	}
}
