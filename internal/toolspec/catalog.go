package toolspec

import (
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Catalog is a runtime's registered tools (reach.Catalog, given as
// Options.Catalog). Made before the runtime, it is what the parts built
// around the runtime look tools up in — policies, approvals, telemetry —
// so that they need no runtime to be built; the runtime registers tools
// into it (Runtime.Register). The zero Catalog is not usable: make one
// with NewCatalog. Its methods are safe for concurrent use.
type Catalog[R any] struct {
	m     atomic.Pointer[map[string]*Compiled[R]] // swapped whole on registration: lookups take no lock
	mu    sync.Mutex                              // registrations, one at a time
	owned atomic.Bool                             // a runtime uses it
}

// NewCatalog returns an empty catalog, for one runtime.
func NewCatalog[R any]() *Catalog[R] {
	c := &Catalog[R]{}
	c.m.Store(&map[string]*Compiled[R]{})
	return c
}

// Tools returns the tools sorted by name (their Func included).
func (c *Catalog[R]) Tools() []Tool {
	m := *c.m.Load()
	out := make([]Tool, 0, len(m))
	for _, t := range m {
		out = append(out, t.Tool)
	}
	slices.SortFunc(out, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Tool returns the tool of that name.
func (c *Catalog[R]) Tool(name string) (Tool, bool) {
	if t := c.Get(name); t != nil {
		return t.Tool, true
	}
	return Tool{}, false
}

// Has reports whether a tool of that name is registered.
func (c *Catalog[R]) Has(name string) bool { return c.Get(name) != nil }

// Get returns the compiled tool of that name, or nil.
func (c *Catalog[R]) Get(name string) *Compiled[R] { return (*c.m.Load())[name] }

// All returns every compiled tool, by name, as registered now.
func (c *Catalog[R]) All() iter.Seq2[string, *Compiled[R]] { return maps.All(*c.m.Load()) }

// Names returns the names of the tools, as registered now.
func (c *Catalog[R]) Names() iter.Seq[string] { return maps.Keys(*c.m.Load()) }

// Own marks the catalog as a runtime's; it reports false if another
// runtime has it already.
func (c *Catalog[R]) Own() bool { return c.owned.CompareAndSwap(false, true) }

// Update registers a change, all or nothing: edit is given a copy of the
// tools by name, and what it leaves there replaces them unless it fails.
func (c *Catalog[R]) Update(edit func(next map[string]*Compiled[R]) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := maps.Clone(*c.m.Load())
	if err := edit(next); err != nil {
		return err
	}
	c.m.Store(&next)
	return nil
}

// Alternatives lists up to five read tools, by name, that share a tag
// with t: what a caller refused t may use instead. The tag that names a
// tool's upstream ("upstream:NAME", which the gateway gives each of its
// tools) is not shared so: it says nothing of what a tool does.
func (c *Catalog[R]) Alternatives(t *Compiled[R]) []string {
	if t == nil || len(t.Tags) == 0 {
		return nil
	}
	shared := func(tag string) bool { return !strings.HasPrefix(tag, "upstream:") && slices.Contains(t.Tags, tag) }
	var out []string
	for name, o := range c.All() {
		if name != t.Name && o.Access == Read && slices.ContainsFunc(o.Tags, shared) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out[:min(len(out), 5)]
}

// HealthyAlternatives lists up to five tools the model may use instead
// of t, whose breakers let calls through at now: its fallbacks, then the
// read tools that share a tag with it (Alternatives) of another upstream.
func (c *Catalog[R]) HealthyAlternatives(t *Compiled[R], now time.Time) []string {
	var out []string
	for _, f := range t.Fallbacks {
		if ft := c.Get(f.Tool); ft != nil && ft.Access == Read && ft.Healthy(now) {
			out = append(out, f.Tool)
		}
	}
	for _, name := range c.Alternatives(t) {
		ft := c.Get(name)
		if ft == nil || slices.Contains(out, name) || !ft.Healthy(now) || (ft.Upstream != "" && ft.Upstream == t.Upstream) {
			continue
		}
		out = append(out, name)
	}
	return out[:min(len(out), 5)]
}
