package entities

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
)

// frame and req stand for the runtime's frames and requests.
type frame struct{ parent *frame }

type req struct{ halt chan struct{} }

func newTable(maxExact int) *Table[*frame, *req] {
	return New(maxExact, func(f *frame) *frame { return f.parent }, func(r *req) <-chan struct{} { return r.halt })
}

// tree is a request tree as the runtime's state stage uses the table: it
// reads entities (recording the version it saw) and writes them (refused
// if it last saw an older version than the table's).
type tree struct {
	t    *testing.T
	tab  *Table[*frame, *req]
	root *req
	seen Seen
}

func (tr *tree) get(id string) {
	n := "item:" + id
	tr.seen.Set(n, tr.tab.Observe(n))
}

// put writes id and reports whether the write was refused as stale.
func (tr *tree) put(id string) (stale bool) {
	n := "item:" + id
	release, err := tr.tab.Lock(tr.t.Context(), &Holder[*frame, *req]{Root: tr.root, Frame: &frame{}}, []string{n})
	if err != nil {
		tr.t.Fatal(err)
	}
	if seen, ok := tr.seen.Get(n); ok && seen != tr.tab.Observe(n) {
		release(false)
		return true
	}
	tr.seen.Set(n, release(true)[n])
	return false
}

func rig(t *testing.T, maxExact int) (*Table[*frame, *req], func() *tree) {
	tab := newTable(maxExact)
	return tab, func() *tree { return &tree{t: t, tab: tab, root: &req{}} }
}

func (tab *Table[F, R]) exact(n string) bool {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	_, ok := tab.version[n]
	return ok
}

func (tab *Table[F, R]) kept() int {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return len(tab.version)
}

// TestEntityVersionsStayBounded: a table that sees ever more distinct
// entities written keeps the exact versions of only the most recent ones;
// a stale read of an entity whose version was folded into its slot is
// still refused, and a read that is not stale is not, when no entity
// evicted into the same slot was written later.
func TestEntityVersionsStayBounded(t *testing.T) {
	const maxExact = 4
	tab, begin := rig(t, maxExact)
	reader, writer := begin(), begin()
	for _, id := range []string{"stale", "fresh"} {
		writer.put(id)
		reader.get(id)
	}
	// Another request writes "stale" after the reader read it.
	writer.put("stale")
	// Many other entities are written, none of them into the slot of "fresh".
	for i, written := 0, 0; written < 100; i++ {
		id := fmt.Sprint("filler-", i)
		if tab.slot("item:"+id) == tab.slot("item:fresh") {
			continue
		}
		writer.put(id)
		written++
		if kept := tab.kept(); kept > maxExact {
			t.Fatalf("after %d writes: %d exact versions, want at most %d", written, kept, maxExact)
		}
	}
	if tab.exact("item:stale") || tab.exact("item:fresh") {
		t.Fatal("the first entities written are still kept exactly")
	}
	if !reader.put("stale") {
		t.Error("writing an entity changed since it was read was not refused as stale")
	}
	before := tab.Current("item:fresh")
	if reader.put("fresh") {
		t.Error("writing an entity unchanged since it was read was refused as stale")
	}
	// Its version is exact again, and newer than its slot's.
	if now := tab.Current("item:fresh"); !tab.exact("item:fresh") || now <= before {
		t.Errorf("after the write, fresh is at version %d (exact: %v), want above %d", now, tab.exact("item:fresh"), before)
	}
}

// TestReadEntityStaysExact: an entity read by a request is kept exactly
// (and counts as recent) from the read on, so that other entities evicted
// into its slot before the request writes it do not make the write look
// stale; a write by another request since the read still does.
func TestReadEntityStaysExact(t *testing.T) {
	const maxExact = 4
	tests := []struct {
		name    string
		written bool // the target was written before the others (else never)
		changed bool // another request writes the target after the read
	}{
		{name: "never written"},
		{name: "written before the others", written: true},
		{name: "never written, then changed", changed: true},
		{name: "written before the others, then changed", written: true, changed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, begin := rig(t, maxExact)
			// Other entities in the target's slot, so that every eviction
			// raises the slot's version.
			var others []string
			for i := 0; len(others) < 6; i++ {
				if id := fmt.Sprint("other-", i); tab.slot("item:"+id) == tab.slot("item:target") {
					others = append(others, id)
				}
			}
			reader, writer := begin(), begin()
			if tt.written {
				writer.put("target")
			}
			for _, id := range others[:3] {
				writer.put(id) // the exact versions are full once the target or a fourth is written
			}
			if !tt.written {
				writer.put(others[3])
			}
			reader.get("target")
			if tt.changed {
				writer.put("target")
			}
			for _, id := range others[4:] {
				writer.put(id) // each evicts the least recently written or read entity
			}
			if stale := reader.put("target"); stale != tt.changed {
				t.Errorf("writing the target: refused as stale %v, want %v", stale, tt.changed)
			}
			if kept := tab.kept(); kept > maxExact {
				t.Errorf("%d exact versions, want at most %d", kept, maxExact)
			}
		})
	}
}

// TestLock: a call of another request waits for the lock; calls of one
// request share it; waiting on each other across two entities is a
// deadlock, refused to the call that would close the cycle; a wait ends
// with ctx, and an undo's wait with a stop of the request it undoes.
func TestLock(t *testing.T) { synctest.Test(t, testLock) }

func testLock(t *testing.T) {
	tab := newTable(DefaultMaxExact)
	a, b := &req{}, &req{halt: make(chan struct{})}
	// Each call shows its entities its own way (Holder.Show): a deadlock
	// names each entity as the call it belongs to shows it.
	ha := &Holder[*frame, *req]{Root: a, Frame: &frame{}, Show: func(n string) string { return "a's " + n }}
	relX, err := tab.Lock(t.Context(), ha, []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	// Another call of request a takes x too.
	relX2, err := tab.Lock(t.Context(), &Holder[*frame, *req]{Root: a, Frame: &frame{}}, []string{"x"})
	if err != nil {
		t.Fatalf("a second call of the same request: %v", err)
	}
	relX2(false)
	hb := &Holder[*frame, *req]{Root: b, Frame: &frame{}, Show: func(n string) string { return "b's " + n }}
	relY, err := tab.Lock(t.Context(), hb, []string{"y"})
	if err != nil {
		t.Fatal(err)
	}
	// b waits for x, held by a ...
	waited := make(chan error, 1)
	go func() {
		rel, err := tab.Lock(t.Context(), hb, []string{"x"})
		if err == nil {
			rel(false)
		}
		waited <- err
	}()
	synctest.Wait()
	// ... so a waiting for y, held by b, would close a cycle.
	_, err = tab.Lock(t.Context(), ha, []string{"y"})
	d, ok := errors.AsType[*Deadlock[*frame, *req]](err)
	if !ok || d.Entity != "y" || d.Holder != hb || d.Waiting != "x" {
		t.Fatalf("closing a cycle: err = %v, want a deadlock on y held by b waiting for x", err)
	}
	if d.Shown != [2]string{"a's y", "b's x"} || d.Error() != "writing a's y would deadlock: it is held by a call that waits for b's x" ||
		d.Refusal(false, "b", "w").Message != "Writing a's y would deadlock: request b holds it and waits for b's x, which this request holds." {
		t.Errorf("the deadlock shows %q, %q, %q; want y as a shows it and x as b does", d.Shown, d.Error(), d.Refusal(false, "b", "w").Message)
	}
	if vers := relX(true); vers["x"] == 0 {
		t.Errorf("release(bump) = %v, want x at a new version", vers)
	}
	if err := <-waited; err != nil {
		t.Errorf("b's wait for x once a released it: %v", err)
	}
	// A wait that ctx ends takes nothing.
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := errors.New("gone")
	cancel(cause)
	if _, err := tab.Lock(ctx, ha, []string{"y"}); err != cause {
		t.Errorf("a wait whose ctx ended: err = %v, want its cause", err)
	}
	// An undo for request b waits no longer once b is stopped.
	undo := &Holder[*frame, *req]{Root: a, Frame: &frame{}, Undoes: b}
	close(b.halt)
	if _, err := tab.Lock(t.Context(), undo, []string{"y"}); !errors.Is(err, ErrHalted) {
		t.Errorf("an undo of a stopped request: err = %v, want ErrHalted", err)
	}
	relY(false)
}

// TestLockTurnSiblings: the calls one model turn asked for at once (a
// framework's parallel tool calls, each its own call at the gateway) are
// a batch: two of them that write one entity take turns (R4), as calls of
// other requests do, where calls of one request otherwise share the lock.
// A call beneath one of them, and a call of another turn, still share it;
// the sibling that waits makes no later lock a deadlock.
func TestLockTurnSiblings(t *testing.T) { synctest.Test(t, testLockTurnSiblings) }

func testLockTurnSiblings(t *testing.T) {
	tab := newTable(DefaultMaxExact)
	a := &req{}
	turn, other := &frame{}, &frame{}
	first := &Holder[*frame, *req]{Root: a, Frame: &frame{parent: turn}, Turn: turn}
	relFirst, err := tab.Lock(t.Context(), first, []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var relSecond func(bool) map[string]uint64
	go func() {
		var err error
		relSecond, err = tab.Lock(t.Context(), &Holder[*frame, *req]{Root: a, Frame: &frame{parent: turn}, Turn: turn}, []string{"x"})
		got <- err
	}()
	synctest.Wait()
	select {
	case err := <-got:
		t.Fatalf("the second call of the turn took x while the first held it (err %v)", err)
	default:
	}
	// Beneath the first, and in another turn, x is shared; a lock of y
	// beside the waiting sibling is no deadlock.
	for name, h := range map[string]*Holder[*frame, *req]{
		"a call beneath the first": {Root: a, Frame: &frame{parent: first.Frame}},
		"a call of another turn":   {Root: a, Frame: &frame{parent: other}, Turn: other},
	} {
		rel, err := tab.Lock(t.Context(), h, []string{"x", "y"})
		if err != nil {
			t.Fatalf("%s: %v, want x and y at once", name, err)
		}
		rel(false)
	}
	relFirst(true)
	if err := <-got; err != nil {
		t.Fatalf("the second call of the turn once the first let go: %v", err)
	}
	relSecond(false)
}
