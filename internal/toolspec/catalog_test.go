package toolspec

import (
	"errors"
	"fmt"
	"testing"
)

// TestCatalog: an update is all or nothing; the tools are listed by name;
// a catalog is owned once.
func TestCatalog(t *testing.T) {
	c := NewCatalog[any]()
	add := func(names ...string) func(map[string]*Compiled[any]) error {
		return func(next map[string]*Compiled[any]) error {
			for _, n := range names {
				ct, err := Compile[any](Tool{Name: n, Func: nop}, 1, 1)
				if err != nil {
					return err
				}
				next[n] = ct
			}
			return nil
		}
	}
	if err := c.Update(add("b", "a")); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(add("c", "no good")); err == nil {
		t.Fatal("a bad name was registered")
	}
	if c.Has("c") {
		t.Fatal("a failed update left c registered")
	}
	var names []string
	for _, tl := range c.Tools() {
		names = append(names, tl.Name)
	}
	if fmt.Sprint(names) != "[a b]" {
		t.Fatalf("Tools = %v", names)
	}
	if tl, ok := c.Tool("a"); !ok || tl.Name != "a" || c.Get("z") != nil {
		t.Fatalf("Tool(a) = %v, %v", tl, ok)
	}
	if !c.Own() || c.Own() {
		t.Fatal("a catalog was owned twice, or not once")
	}
	c.Update(func(next map[string]*Compiled[any]) error { delete(next, "a"); return errors.New("no") })
	if !c.Has("a") {
		t.Fatal("a failed removal removed a")
	}
}
