package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/policy/pin"
	"github.com/agentreach/reach/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool pinning (P7): the first definition seen of an upstream tool (title,
// description, schemas, annotations) is pinned in the data folder's
// pins.json; a later, different definition is held, the tool neither listed
// nor callable, until `reach tools approve NAME` pins it. The gateway looks
// at the held tools again every pinRecheck, so an approval applies within
// seconds without a restart.

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
	ps, err := pin.Open(pin.Path(dir))
	if err != nil {
		return err
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
	return d
}

// pinned returns the tools whose definitions are pinned (new or unchanged),
// marking the others held; tools not from upstreams pass.
func (g *Gateway) pinned(tools []reach.Tool) []reach.Tool {
	if g.pins == nil {
		return tools
	}
	return slices.DeleteFunc(tools, func(t reach.Tool) bool {
		orig := g.pool.Original(t)
		if orig == nil {
			return false
		}
		st, err := g.pins.Check(t.Name, pinDefinition(orig))
		if err != nil {
			g.log.Warn("checking a tool's pin failed; the tool is held", "tool", t.Name, "err", err)
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
		if !g.anyAwaitingApproval() {
			continue
		}
		var back []reach.Tool
		for _, tool := range g.pool.Tools() {
			if !g.awaitingApproval(tool.Name) {
				continue
			}
			if ok := g.pinned([]reach.Tool{tool}); len(ok) == 1 {
				back = append(back, g.prepare(tool))
			}
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
	for _, t := range g.pinned(slices.Clone(all)) {
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
// changed definition is held (reach.Options.Missing): the caller learns it
// is held, not that it does not exist, and who can let it through.
func (g *Gateway) missingTool(name string) *reach.Error {
	if !g.awaitingApproval(name) {
		return nil
	}
	return &reach.Error{Type: reach.TypeNotFound, Code: "tool_held",
		Message:    fmt.Sprintf("Tool %s is held: its definition changed upstream since it was approved, and it is not called until an operator reviews the change.", name),
		Suggestion: fmt.Sprintf("Use another tool for now. An operator lets it through with `reach tools diff %s`, then `reach tools approve %s`.", name, name)}
}
