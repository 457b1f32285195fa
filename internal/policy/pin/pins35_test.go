package pin

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/store"
)

// countingPins is a store's pins that counts its writes.
type countingPins struct {
	store.Pins
	writes atomic.Int32
}

func (c *countingPins) PutPin(ctx context.Context, tool string, data []byte) (int64, error) {
	c.writes.Add(1)
	return c.Pins.PutPin(ctx, tool, data)
}

func (c *countingPins) PutPins(ctx context.Context, data map[string][]byte) (int64, error) {
	c.writes.Add(1)
	return c.Pins.PutPins(ctx, data)
}

// TestPins35CheckAllOneWrite: CheckAll of many tools gives each the
// status Check gives it (new, unchanged, changed and held, held again,
// back to the pinned definition, an unreadable row, a definition that
// cannot be hashed), leaves the same pins, and stores what changed in one
// write; with nothing changed, none. Before, each new pin was a write of
// its own (with the pins file, a rewrite of the whole file).
func TestPins35CheckAllOneWrite(t *testing.T) {
	ctx := context.Background()
	def := func(s string) Definition { return Definition{Description: s} }
	open := func() (*Store, *countingPins) {
		db := &countingPins{Pins: store.NewMemory()}
		if _, err := db.Pins.PutPin(ctx, "bad", []byte(`{not json`)); err != nil {
			t.Fatal(err)
		}
		s, err := OpenStore(ctx, db, "")
		if err != nil {
			t.Fatal(err)
		}
		for tool, d := range map[string]string{"same": "s", "changed": "c", "heldagain": "h", "back": "b"} {
			if st, err := s.Check(tool, def(d)); st != New || err != nil {
				t.Fatalf("pinning %s: %s %v", tool, st, err)
			}
		}
		for tool, d := range map[string]string{"heldagain": "h2", "back": "b2"} {
			if st, err := s.Check(tool, def(d)); st != Held || err != nil {
				t.Fatalf("changing %s: %s %v", tool, st, err)
			}
		}
		db.writes.Store(0)
		return s, db
	}
	defs := map[string]Definition{"same": def("s"), "changed": def("c2"), "heldagain": def("h2"), "back": def("b"), "bad": def("x"),
		"unhashable": {Description: "u", InputSchema: json.RawMessage(`{not json`)}}
	const fresh = 50
	for i := range fresh {
		defs[fmt.Sprintf("new%02d", i)] = def(fmt.Sprint(i))
	}

	one, _ := open()
	want := map[string]Status{}
	for tool, d := range defs {
		st, _ := one.Check(tool, d)
		want[tool] = st
	}
	all, db := open()
	got, err := all.CheckAll(defs)
	if err == nil {
		t.Error("CheckAll of a definition that cannot be hashed: no error, want one naming it")
	}
	if len(got) != len(defs) {
		t.Errorf("CheckAll returned %d statuses, want %d", len(got), len(defs))
	}
	for tool, st := range want {
		if got[tool] != st {
			t.Errorf("CheckAll: %s is %q, Check says %q", tool, got[tool], st)
		}
	}
	if want["new00"] != New || want["changed"] != Held || want["back"] != Unchanged || want["bad"] != Held || want["unhashable"] != Held {
		t.Errorf("Check's statuses are not those the test means to compare: %v", want)
	}
	if n := db.writes.Load(); n != 1 {
		t.Errorf("CheckAll of %d new tools and 2 changes: %d writes, want 1", fresh, n)
	}
	pinsOf := func(s *Store) map[string]string {
		l, err := s.List(false)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range l {
			out[p.Tool] = p.Hash
			if p.Pending != nil {
				out[p.Tool] += " pending " + p.Pending.Hash
			}
		}
		return out
	}
	if a, b := fmt.Sprint(pinsOf(one)), fmt.Sprint(pinsOf(all)); a != b {
		t.Errorf("pins after CheckAll:\n%s\nafter Check of each:\n%s", b, a)
	}
	again, err := OpenStore(ctx, db.Pins, "") // what was written, read back
	if err != nil {
		t.Fatal(err)
	}
	if a, b := fmt.Sprint(pinsOf(all)), fmt.Sprint(pinsOf(again)); a != b {
		t.Errorf("pins read back after CheckAll:\n%s\nwant:\n%s", b, a)
	}
	db.writes.Store(0)
	delete(defs, "unhashable")
	if _, err := all.CheckAll(defs); err != nil || db.writes.Load() != 0 {
		t.Errorf("CheckAll again, nothing changed: %d writes, %v; want none", db.writes.Load(), err)
	}

	// In the pins file: written once, read back the same.
	path := filepath.Join(t.TempDir(), File)
	fs, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := fs.CheckAll(defs); err != nil || got["new07"] != New || got["same"] != New {
		t.Fatalf("CheckAll in the pins file: %v %v", got, err)
	}
	back, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := fmt.Sprint(pinsOf(fs)), fmt.Sprint(pinsOf(back)); a != b || len(pinsOf(back)) != len(defs) {
		t.Errorf("the pins file read back:\n%s\nwant:\n%s", b, a)
	}
}
