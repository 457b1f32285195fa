package toolspec

import (
	"errors"
	"fmt"
	"testing"
	"time"
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

// TestAlternatives: the reads that share a tag (not their upstream's),
// sorted, up to five; the healthy ones put the tool's fallbacks first and leave out its own
// upstream's tools.
func TestAlternatives(t *testing.T) {
	c := NewCatalog[any]()
	c.Update(func(next map[string]*Compiled[any]) error {
		for _, tl := range []Tool{
			{Name: "kb__search", Upstream: "kb", Tags: []string{"search"}, Fallback: []Followup{{Tool: "zmirror"}}},
			{Name: "kb__find", Upstream: "kb", Tags: []string{"search"}},
			{Name: "web", Upstream: "web", Tags: []string{"search", "net"}},
			{Name: "zmirror", Upstream: "mirror"},
			{Name: "delete", Access: Write, Tags: []string{"search"}},
			{Name: "a1", Tags: []string{"search"}}, {Name: "a2", Tags: []string{"search"}},
			{Name: "a3", Tags: []string{"search"}}, {Name: "a4", Tags: []string{"search"}},
			// An upstream's tools share only its tag, which names no purpose.
			{Name: "shop__refund", Upstream: "shop", Access: Write, Tags: []string{"upstream:shop"}},
			{Name: "shop__lookup", Upstream: "shop", Tags: []string{"upstream:shop"}},
		} {
			tl.Func = nop
			ct, err := Compile[any](tl, 1, 1)
			if err != nil {
				return err
			}
			next[tl.Name] = ct
		}
		return nil
	})
	t0 := c.Get("kb__search")
	if got := fmt.Sprint(c.Alternatives(t0)); got != "[a1 a2 a3 a4 kb__find]" {
		t.Errorf("Alternatives = %s", got)
	}
	if got := fmt.Sprint(c.HealthyAlternatives(t0, time.Now())); got != "[zmirror a1 a2 a3 a4]" {
		t.Errorf("HealthyAlternatives = %s", got)
	}
	if got := c.Alternatives(c.Get("shop__refund")); got != nil {
		t.Errorf("Alternatives of shop__refund = %s, want none: its upstream's tag is all they share", got)
	}
	if c.Alternatives(c.Get("zmirror")) != nil || c.Alternatives(nil) != nil {
		t.Error("a tool without tags has alternatives")
	}
}
