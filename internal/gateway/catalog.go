package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/names"
	"github.com/agentreach/reach/internal/policy/pin"
	"github.com/agentreach/reach/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The catalog: the tools the gateway serves, from the built-in examples and
// the upstreams, with the configured overrides applied (config.ToolOverride),
// registered in the runtime, listed by the MCP server (front.Server.SyncTools)
// and shown to each caller as its policies let it see them.
//
// Tool pinning (P7): the first definition seen of an upstream tool (title,
// description, schemas, annotations) is pinned in the data folder's
// store; a later, different definition is held, the tool neither listed
// nor callable, until `reach tools approve NAME` pins it. The gateway looks
// at the held tools again every pinRecheck, so an approval applies within
// seconds without a restart.

// register applies the overrides to tools, wraps their Funcs and registers
// them; an override naming no tool is an error (offline, only one that no
// upstream could expose: validate --offline passed a misspelt built-in
// tool's that serve then refused).
func (g *Gateway) register(tools []reach.Tool) error {
	byName := map[string]int{}
	for i, t := range tools {
		if j, dup := byName[t.Name]; dup {
			return fmt.Errorf("two tools are exposed as %s (%s); give one upstream a prefix", t.Name, describeOrigin(tools[j], t))
		}
		byName[t.Name] = i
	}
	for _, name := range slices.Sorted(maps.Keys(g.cfg.Tools)) {
		if _, ok := byName[name]; !ok && !(g.opts.Offline && g.upstreamMayExpose(name)) && !g.awaitingApproval(name) {
			return g.cfg.Errorf([]any{"tools", name}, "tools: no tool is exposed as %s%s", name, suggestTool(name, tools))
		}
	}
	for _, t := range tools {
		if err := g.rt.Register(g.prepare(t)); err != nil {
			if _, ok := g.cfg.Tools[t.Name]; ok {
				return g.cfg.Errorf([]any{"tools", t.Name}, "%v", err)
			}
			return err
		}
	}
	return nil
}

// upstreamMayExpose says whether an upstream could expose a tool of this
// name: one without a prefix, or one whose prefix it begins with.
func (g *Gateway) upstreamMayExpose(name string) bool {
	for _, u := range g.cfg.Upstreams {
		prefix := u.Name + "__"
		if u.Prefix != nil {
			prefix = *u.Prefix
		}
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// prepare applies the configured override to t.
func (g *Gateway) prepare(t reach.Tool) reach.Tool {
	if o, ok := g.cfg.Tools[t.Name]; ok {
		o.Apply(&t)
	}
	return t
}

func describeOrigin(a, b reach.Tool) string {
	return origin(a) + " and " + origin(b)
}

func origin(t reach.Tool) string {
	for _, tag := range t.Tags {
		if name, ok := strings.CutPrefix(tag, "upstream:"); ok {
			return "upstream " + name
		}
	}
	return "the built-in examples"
}

func suggestTool(name string, tools []reach.Tool) string {
	var best string
	bestD := 1 << 30
	for _, t := range tools {
		if d := names.Distance(name, t.Name); d < bestD {
			best, bestD = t.Name, d
		}
	}
	if best != "" && bestD <= max(3, len(name)/3) {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	if len(tools) == 0 {
		return " (no tools were found)"
	}
	return "; exposed names are <upstream>__<tool> unless the upstream sets prefix"
}

// Visible returns the tools the caller id could call, at most 50, or every
// listed tool without policies.
func (g *Gateway) Visible(id *auth.Identity) []reach.Tool {
	tools := g.rt.Tools()
	tools = slices.DeleteFunc(tools, func(t reach.Tool) bool { return t.Access == reach.Forbidden || g.awaitingApproval(t.Name) })
	if g.policy == nil {
		return tools
	}
	return g.policy.Filter(principalFor(id), "", tools, nil)
}

// Narrows reports whether Visible may leave out tools the MCP server
// lists: policies decide who sees what, or a tool is held.
func (g *Gateway) Narrows() bool { return g.policy != nil || g.anyAwaitingApproval() }

// awaitingApproval reports whether a tool is held: its changed definition
// waits for approval (pinning).
func (g *Gateway) awaitingApproval(name string) bool {
	_, ok := g.awaiting.Load(name)
	return ok
}

// anyAwaitingApproval reports whether any tool is held.
func (g *Gateway) anyAwaitingApproval() bool {
	found := false
	g.awaiting.Range(func(_, _ any) bool { found = true; return false })
	return found
}

var pinRecheck = 2 * time.Second

// openPins opens the pin store when there are upstream tools to pin and a
// data folder to keep it in: a configuration loaded from a file, or one
// naming its data folder (a config.Config built in memory without one, as in
// tests and benchmarks, pins nothing).
func (g *Gateway) openPins() error {
	if g.pool == nil || g.pool.Len() == 0 || g.opts.Ephemeral || !g.cfg.HasDataDir() {
		return nil
	}
	dir, err := g.cfg.EnsureDataDir()
	if err != nil {
		return err
	}
	var ps *pin.Store
	if g.store != nil { // in the store; an older gateway's pins.json is imported
		ps, err = pin.OpenStore(context.Background(), g.store, pin.Path(dir))
	} else {
		ps, err = pin.Open(pin.Path(dir))
	}
	if err != nil {
		return err
	}
	if bad, err := ps.Unreadable(); err == nil {
		for tool, why := range bad {
			g.log.Warn("a stored row could not be read (a disk error, a hand edit, a partial restore): it is kept in the store as it is; "+
				"inspect the row in its table, then fix or delete it by hand", "table", "pins", "key", tool, "err", why,
				"reach_did", "the tool is held as changed: its calls are refused")
		}
	}
	// The pins of an upstream no longer configured are kept, noted
	// unlisted (an upstream listing them again notes them listed), for
	// reach tools forget --unlisted to drop: some keys do not name their
	// upstream (a resource's URI, a tool under a prefix), so a pin dropped
	// at a start without the upstream (renamed, commented out, misspelled
	// for one start; or on a shared store, still served by another
	// instance) would take a changed definition listed again under the
	// same key for a first sight.
	configured := map[string]bool{}
	for _, u := range g.cfg.Upstreams {
		configured[u.Name] = true
	}
	if pins, err := ps.List(false); err != nil {
		g.log.Warn("reading the pins to note those of upstreams not configured as unlisted failed; they are kept as they were", "err", err)
	} else {
		var gone []pin.Listing
		for _, p := range pins {
			if l := (pin.Listing{Upstream: p.Upstream, Content: pin.Content(p.Tool)}); p.Upstream != "" && !configured[p.Upstream] && p.Unlisted == nil && !slices.Contains(gone, l) {
				gone = append(gone, l)
			}
		}
		if len(gone) > 0 {
			if _, err := ps.CheckListings(nil, nil, gone); err != nil {
				g.log.Warn("noting the pins of upstreams not configured as unlisted failed", "err", err)
			} else {
				g.log.Info("kept the pins of upstreams not configured, noted unlisted; once no configuration serves them, drop them with reach tools forget --unlisted",
					"upstream", gone[0].Upstream)
			}
		}
	}
	g.pins = ps
	g.Go(func() { g.recheckPins(pinRecheck) })
	return nil
}

func pinDefinition(t *mcp.Tool) pin.Definition {
	d := pin.Definition{Title: t.Title, Description: t.Description}
	if t.InputSchema != nil {
		d.InputSchema, _ = json.Marshal(t.InputSchema)
	}
	if t.OutputSchema != nil {
		d.OutputSchema, _ = json.Marshal(t.OutputSchema)
	}
	if t.Annotations != nil {
		d.Annotations, _ = json.Marshal(t.Annotations)
	}
	if len(t.Icons) > 0 { // forwarded to clients (front.mcpTool): a change is a change
		d.Icons, _ = json.Marshal(t.Icons)
	}
	return d
}

// pinContent is the pool's Pinner: it pins an upstream's prompts,
// resources and resource templates (by pin key, upstream.PinKey) in the
// tools' pin store, in one write for all, and returns the held ones.
func (g *Gateway) pinContent(up string, defs map[string]any, listing bool) map[string]bool {
	ds := make(map[string]pin.Definition, len(defs))
	for key, def := range defs {
		ds[key] = contentDefinition(def)
	}
	var whole []pin.Listing
	if listing {
		whole = []pin.Listing{{Upstream: up, Content: true}}
	}
	sts, err := g.pins.CheckListings(ds, func(string) string { return up }, whole)
	if err != nil {
		g.log.Warn("checking prompts' or resources' pins failed; those it names are held", "err", err)
	}
	held := map[string]bool{}
	for key, st := range sts {
		if st == pin.Held {
			held[key] = true
		}
	}
	return held
}

// contentDefinition is what is pinned of a prompt, resource or resource
// template: what reach lists of it to clients but its name or URI (the
// pin's key), a resource's size and its lastModified annotation (which
// change with what it holds).
// A prompt's arguments stand as its input schema, the rest of a resource
// as its annotations.
func contentDefinition(def any) pin.Definition {
	var d pin.Definition
	icons := func(is []mcp.Icon) {
		if len(is) > 0 {
			d.Icons, _ = json.Marshal(is)
		}
	}
	type rest struct {
		Name        string           `json:"name,omitempty"`
		MIMEType    string           `json:"mimeType,omitempty"`
		Annotations *mcp.Annotations `json:"annotations,omitempty"`
	}
	unstamped := func(a *mcp.Annotations) *mcp.Annotations {
		if a == nil || a.LastModified == "" {
			return a
		}
		c := *a
		c.LastModified = ""
		return &c
	}
	switch v := def.(type) {
	case *mcp.Prompt:
		d.Title, d.Description = v.Title, v.Description
		if len(v.Arguments) > 0 {
			d.InputSchema, _ = json.Marshal(v.Arguments)
		}
		icons(v.Icons)
	case *mcp.Resource:
		d.Title, d.Description = v.Title, v.Description
		d.Annotations, _ = json.Marshal(rest{v.Name, v.MIMEType, unstamped(v.Annotations)})
		icons(v.Icons)
	case *mcp.ResourceTemplate:
		d.Title, d.Description = v.Title, v.Description
		d.Annotations, _ = json.Marshal(rest{v.Name, v.MIMEType, unstamped(v.Annotations)})
		icons(v.Icons)
	}
	return d
}

// pinned returns the tools whose definitions are pinned (new or unchanged),
// marking the others held; tools not from upstreams pass. tools holds the
// whole listing of each upstream named in whole: the pins of their other
// tools are noted unlisted (pin.Store.CheckListings).
func (g *Gateway) pinned(tools []reach.Tool, whole ...string) []reach.Tool {
	if g.pins == nil {
		return tools
	}
	// All checked at once: what is new or changed is saved in one write.
	defs := map[string]pin.Definition{}
	of := map[string]string{}
	for _, t := range tools {
		if orig := g.pool.Original(t); orig != nil {
			defs[t.Name] = pinDefinition(orig)
			if up, _, ok := g.pool.Serving(t); ok {
				of[t.Name] = up
			}
		}
	}
	listings := make([]pin.Listing, 0, len(whole))
	for _, up := range whole {
		listings = append(listings, pin.Listing{Upstream: up})
	}
	if len(defs) == 0 && len(listings) == 0 {
		return tools
	}
	sts, err := g.pins.CheckListings(defs, func(k string) string { return of[k] }, listings)
	if err != nil {
		g.log.Warn("checking tools' pins failed; those it names are held", "err", err)
	}
	return slices.DeleteFunc(tools, func(t reach.Tool) bool {
		st, ok := sts[t.Name]
		if !ok {
			return false
		}
		if st == pin.Held {
			if _, was := g.awaiting.Swap(t.Name, struct{}{}); !was {
				g.log.Warn("an upstream tool's definition changed: it is held until approved (reach tools diff/approve)", "tool", t.Name)
			}
			return true
		}
		g.awaiting.Delete(t.Name)
		return false
	})
}

// recheckPins registers held tools once their change is approved.
func (g *Gateway) recheckPins(every time.Duration) {
	select { // the MCP server is made once the tools are registered
	case <-g.ready:
	case <-g.ctx.Done():
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
		}
		g.pool.RecheckPins()
		if !g.anyAwaitingApproval() {
			continue
		}
		var waiting, back []reach.Tool
		for _, tool := range g.pool.Tools() {
			if g.awaitingApproval(tool.Name) {
				waiting = append(waiting, tool)
			}
		}
		for _, tool := range g.pinned(waiting) {
			back = append(back, g.prepare(tool))
		}
		if len(back) == 0 {
			continue
		}
		if err := g.rt.Replace(back...); err != nil {
			g.log.Warn("registering approved tools failed", "err", err)
			continue
		}
		g.front.SyncTools()
		for _, tool := range back {
			g.log.Info("an approved tool definition is in force", "tool", tool.Name)
		}
	}
}

// Relisted registers the tools an upstream lists again (upstream.Catalog):
// new and changed ones with their overrides, unless pinning holds them; a
// tool it dropped, or one now held, leaves the runtime (later calls get
// "unknown tool" with the names that remain, calls in flight finish). A
// name another source exposes is not taken over.
func (g *Gateway) Relisted(up string, tools []reach.Tool, gone []string) {
	log := g.log.With("upstream", up)
	all := slices.DeleteFunc(tools, func(t reach.Tool) bool {
		if g.exposedElsewhere(t.Name, up) {
			log.Warn("tool skipped: another source already exposes its name; give one upstream a prefix", "tool", t.Name)
			return true
		}
		return false
	})
	var prepared []reach.Tool
	for _, t := range g.pinned(slices.Clone(all), up) {
		prepared = append(prepared, g.prepare(t))
	}
	for _, t := range all {
		if g.awaitingApproval(t.Name) {
			gone = append(gone, t.Name) // a changed definition waits for approval
		}
	}
	// Only this upstream's own tools leave: a name it stopped listing may
	// be another source's (skipped above when this one listed it).
	g.rt.Unregister(slices.DeleteFunc(gone, func(name string) bool {
		t, ok := g.rt.Tool(name)
		return ok && !slices.Contains(t.Tags, upstream.Tag+up)
	})...)
	if err := g.rt.Replace(prepared...); err != nil {
		log.Warn("registering re-listed tools failed", "err", err)
	}
	g.front.SyncTools()
	log.Info("upstream tools re-listed", "tools", len(prepared))
}

// exposedElsewhere reports whether the exposed name is another source's
// than upstream up: registered for another upstream or a tool that is no
// upstream's, or held (pinning) while another upstream lists it. A tool an
// upstream lists later under that name must not take it over.
func (g *Gateway) exposedElsewhere(name, up string) bool {
	if t, ok := g.rt.Tool(name); ok {
		return !slices.Contains(t.Tags, upstream.Tag+up)
	}
	return g.awaitingApproval(name) && g.pool.ListedElsewhere(name, up)
}

// missingTool explains a call of a tool that is not registered because its
// upstream has not been reached yet, or because its changed definition is
// held (reach.Options.Missing): the caller learns which, not that it does
// not exist, and what to do.
func (g *Gateway) missingTool(name string) *reach.Error {
	if g.pool != nil {
		if e := g.pool.Unreached(name); e != nil { // an upstream not reached since the start: its tools are not known yet
			return e
		}
	}
	if !g.awaitingApproval(name) {
		return nil
	}
	return &reach.Error{Type: reach.TypeNotFound, Code: "tool_held",
		Message:    fmt.Sprintf("Tool %s is held: its definition changed upstream since it was approved, and it is not called until an operator reviews the change.", name),
		Suggestion: fmt.Sprintf("Use another tool for now. An operator lets it through with `reach tools diff %s`, then `reach tools approve %s`.", name, name)}
}
