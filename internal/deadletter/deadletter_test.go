package deadletter

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/fault"
)

func TestMemoryQueue(t *testing.T) {
	ctx := context.Background()
	q := NewMemory()
	a, b := &Letter{Tool: "undo_a"}, &Letter{Tool: "undo_b"}
	for _, d := range []*Letter{a, b} {
		if err := q.Add(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(a.ID, "dl_") || a.ID == b.ID || a.State != Open || a.Updated.IsZero() {
		t.Fatalf("Add set %+v", a)
	}
	got, err := q.Take(ctx, a.ID)
	if err != nil || got.State != Taken {
		t.Fatalf("Take = %+v, %v", got, err)
	}
	if _, err := q.Take(ctx, a.ID); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second Take = %v, want ErrBusy", err)
	}
	if _, err := q.Take(ctx, "dl_nothing"); !errors.Is(err, ErrNone) {
		t.Fatalf("Take of no letter = %v, want ErrNone", err)
	}
	if open, _ := q.List(ctx, Open); len(open) != 2 {
		t.Fatalf("List(open) = %d letters, want both (a taken one is still open)", len(open))
	}
	// Settled open again, it can be taken again; resolved, it leaves.
	got.State, got.Attempts = Open, 1
	if err := q.Settle(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := q.Settle(ctx, got); err == nil {
		t.Fatal("a Settle of a letter not taken succeeded")
	}
	if _, err := Dismiss(ctx, q, a.ID, "ops", "done by hand"); err != nil {
		t.Fatal(err)
	}
	all, _ := q.List(ctx, "")
	if len(all) != 1 || all[0].ID != b.ID {
		t.Fatalf("after the dismissal the queue holds %+v, want only b", all)
	}
	if _, err := Dismiss(ctx, q, a.ID, "ops", "again"); !errors.Is(err, ErrNone) {
		t.Fatalf("a second dismissal = %v, want ErrNone", err)
	}
}

func TestAttemptsAndRetried(t *testing.T) {
	for e, want := range map[*fault.Error]int{nil: 1, {}: 1, {Retry: "3/3"}: 3, {Retry: "2/5"}: 2, {Retry: "x"}: 1} {
		if got := Attempts(e); got != want {
			t.Errorf("Attempts(%+v) = %d, want %d", e, got, want)
		}
	}
	old := &fault.Error{Code: "timeout"}
	d := &Letter{State: Taken, Attempts: 3, Error: old}
	d.Retried("ops", true, nil)
	if d.State != Retried || d.Attempts != 4 || d.Note != "retried by ops" || d.Error != old {
		t.Errorf("a retry that succeeded left %+v", d)
	}
	again := &fault.Error{Code: "unavailable"}
	d = &Letter{State: Taken, Attempts: 3, Error: old}
	d.Retried("ops", false, again)
	if d.State != Open || d.Attempts != 4 || d.Note != "" || d.Error != again {
		t.Errorf("a retry that failed left %+v", d)
	}
}
