package deadletter

import (
	"context"
	"errors"
	"strings"
	"testing"
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
