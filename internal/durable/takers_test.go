package durable

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/store"
)

// deadLives is a Shared whose dead lives are lives, with no other work.
type deadLives struct{ lives []string }

func (d *deadLives) Dead(context.Context) ([]string, error)                         { return d.lives, nil }
func (d *deadLives) OpenFramesOf(context.Context, []string) ([]*store.Frame, error) { return nil, nil }
func (d *deadLives) ClaimOrphans(context.Context, int) ([]string, error)            { return nil, nil }
func (d *deadLives) Release(context.Context, string) error                          { return nil }
func (d *deadLives) Forget(context.Context, string) error                           { return nil }

// takenBy lists the store's dead letters as "state taker", oldest first.
func takenBy(t *testing.T, st store.DeadLetters) string {
	t.Helper()
	ds, err := st.ListDeadLetters(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s %q", d.State, d.Taker))
	}
	return strings.Join(out, "; ")
}

// TestDeadLetterTakenByADeadLifeReopens: an operator's action on an
// instance sharing the store takes a dead letter (Checkpoints.Take records
// the instance's life), and the instance dies before it settles it. The
// recovery of that life gives it back at once; one taken by a life still
// alive, or with no taker recorded (taken before the store kept one),
// stays taken (the latter for ten minutes). On a store of one process
// (no Shared), the restart gives back every one taken.
func TestDeadLetterTakenByADeadLifeReopens(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	u := &failingUndo{}
	bookAndFail(t, durableRuntime(st, u.tools()...), "r1", "w", "x", "y", "z")
	ds, err := st.ListDeadLetters(ctx, store.DeadOpen)
	if err != nil || len(ds) != 4 {
		t.Fatalf("dead letters: %d, %v; want 4", len(ds), err)
	}
	cp := New(st, nil, nil)
	cp.Share("a/1")
	if _, err := cp.Take(ctx, deadLetterID(ds[0].ID)); err != nil {
		t.Fatal(err)
	}
	for i, taker := range []string{"b/1", ""} {
		if _, err := st.TakeDeadLetter(ctx, ds[i+1].ID, taker); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := takenBy(t, st), `taken "a/1"; taken "b/1"; taken ""; open ""`; got != want {
		t.Fatalf("dead letters taken:\n got %s\nwant %s", got, want)
	}
	// a/1 died: another instance's recovery of it.
	if _, err := Recover(ctx, st, durableRuntime(st, u.tools()...), &RecoverOptions{Shared: &deadLives{lives: []string{"a/1"}}}); err != nil {
		t.Fatal(err)
	}
	if got, want := takenBy(t, st), `open ""; taken "b/1"; taken ""; open ""`; got != want {
		t.Errorf("dead letters after the recovery of a/1:\n got %s\nwant %s", got, want)
	}
	// The folder's one process restarts: nothing else could hold them.
	if _, err := Recover(ctx, st, durableRuntime(st, u.tools()...), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := takenBy(t, st), `open ""; open ""; open ""; open ""`; got != want {
		t.Errorf("dead letters after a restart on SQLite:\n got %s\nwant %s", got, want)
	}
}
