package reach

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// itemRig is a runtime with a read (get) and a write (put) of the entity
// item:{id}, a function that begins a request (ended with the test), and
// one that calls a tool on an item in a request.
func itemRig(t *testing.T) (*Runtime, func() context.Context, func(context.Context, string, string) *Result) {
	rt := New(nil)
	ok := func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`"ok"`), nil }
	rt.MustRegister(
		Tool{Name: "get", Reentrancy: Reentrant, Reads: []string{"item:{id}"}, Func: ok},
		Tool{Name: "put", Access: Write, Reentrancy: Reentrant, Writes: []string{"item:{id}"}, Func: ok},
	)
	begin := func() context.Context {
		ctx, r, err := rt.Begin(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.End)
		return ctx
	}
	n := 0
	call := func(ctx context.Context, tool, id string) *Result {
		n++
		return rt.Call(ctx, &Call{ID: fmt.Sprint("c", n), Tool: tool, Arguments: json.RawMessage(fmt.Sprintf(`{"id":%q}`, id))})
	}
	return rt, begin, call
}

// TestEntityVersionsStayBounded: a runtime that writes ever more distinct
// entities keeps the exact versions of only the most recent ones; a stale
// read of an entity whose version was folded into its slot is still
// refused, and a read that is not stale is not, when no entity evicted into
// the same slot was written later.
func TestEntityVersionsStayBounded(t *testing.T) {
	old := maxExactVersions
	maxExactVersions = 4
	t.Cleanup(func() { maxExactVersions = old })

	rt, begin, call := itemRig(t)
	es := rt.entities
	exact := func(id string) bool {
		es.mu.Lock()
		defer es.mu.Unlock()
		_, ok := es.version["item:"+id]
		return ok
	}
	reader, writer := begin(), begin()
	for _, id := range []string{"stale", "fresh"} {
		if res := call(writer, "put", id); res.IsError() {
			t.Fatal(res.ModelText())
		}
		if res := call(reader, "get", id); res.IsError() {
			t.Fatal(res.ModelText())
		}
	}
	// Another request writes "stale" after the reader read it.
	if res := call(writer, "put", "stale"); res.IsError() {
		t.Fatal(res.ModelText())
	}
	// Many other entities are written, none of them into the slot of "fresh".
	for i, written := 0, 0; written < 100; i++ {
		id := fmt.Sprint("filler-", i)
		if es.slot("item:"+id) == es.slot("item:fresh") {
			continue
		}
		if res := call(writer, "put", id); res.IsError() {
			t.Fatal(res.ModelText())
		}
		written++
		es.mu.Lock()
		kept := len(es.version)
		es.mu.Unlock()
		if kept > maxExactVersions {
			t.Fatalf("after %d writes: %d exact versions, want at most %d", written, kept, maxExactVersions)
		}
	}
	if exact("stale") || exact("fresh") {
		t.Fatal("the first entities written are still kept exactly")
	}
	if res := call(reader, "put", "stale"); res.Status != StatusRefused || res.Error.Code != "stale_read" {
		t.Errorf("writing an entity changed since it was read = %s %s, want a stale read", res.Status, res.ModelText())
	}
	before := es.current("item:fresh")
	if res := call(reader, "put", "fresh"); res.IsError() {
		t.Errorf("writing an entity unchanged since it was read = %s", res.ModelText())
	}
	// Its version is exact again, and newer than its slot's.
	if now := es.current("item:fresh"); !exact("fresh") || now <= before {
		t.Errorf("after the write, fresh is at version %d (exact: %v), want above %d", now, exact("fresh"), before)
	}
}

// TestReadEntityStaysExact: an entity read by a request is kept exactly
// (and counts as recent) from the read on, so that other entities evicted
// into its slot before the request writes it do not make the write look
// stale; a write by another request since the read still does.
func TestReadEntityStaysExact(t *testing.T) {
	old := maxExactVersions
	maxExactVersions = 4
	t.Cleanup(func() { maxExactVersions = old })
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
			rt, begin, call := itemRig(t)
			// Other entities in the target's slot, so that every eviction
			// raises the slot's version.
			var others []string
			for i := 0; len(others) < 6; i++ {
				if id := fmt.Sprint("other-", i); rt.entities.slot("item:"+id) == rt.entities.slot("item:target") {
					others = append(others, id)
				}
			}
			reader, writer := begin(), begin()
			mustPut := func(id string) {
				if res := call(writer, "put", id); res.IsError() {
					t.Fatal(res.ModelText())
				}
			}
			if tt.written {
				mustPut("target")
			}
			for _, id := range others[:3] {
				mustPut(id) // the exact versions are full once the target or a fourth is written
			}
			if !tt.written {
				mustPut(others[3])
			}
			if res := call(reader, "get", "target"); res.IsError() {
				t.Fatal(res.ModelText())
			}
			if tt.changed {
				mustPut("target")
			}
			for _, id := range others[4:] {
				mustPut(id) // each evicts the least recently written or read entity
			}
			res := call(reader, "put", "target")
			if tt.changed {
				if res.Status != StatusRefused || res.Error.Code != "stale_read" {
					t.Errorf("writing an entity changed since it was read = %s %s, want a stale read", res.Status, res.ModelText())
				}
			} else if res.IsError() {
				t.Errorf("writing an entity unchanged since it was read = %s %s, want it written", res.Status, res.ModelText())
			}
			rt.entities.mu.Lock()
			kept := len(rt.entities.version)
			rt.entities.mu.Unlock()
			if kept > maxExactVersions {
				t.Errorf("%d exact versions, want at most %d", kept, maxExactVersions)
			}
		})
	}
}
