package reach

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// TestEntityVersionsStayBounded: a runtime that writes ever more distinct
// entities keeps the exact versions of only the most recent ones; a stale
// read of an entity whose version was folded into its slot is still
// refused, and a read that is not stale is not, when no entity evicted into
// the same slot was written later.
func TestEntityVersionsStayBounded(t *testing.T) {
	old := maxExactVersions
	maxExactVersions = 4
	t.Cleanup(func() { maxExactVersions = old })

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
